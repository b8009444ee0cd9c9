# Turns the file IN into a C source OUT defining `const char pxl_prelude_text[]`.
file(READ ${IN} content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," content "${content}")
file(WRITE ${OUT} "/* generated from src/ir/prelude.h; do not edit */\nconst char pxl_prelude_text[] = {${content} 0};\n")
