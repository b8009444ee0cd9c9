# Turns the file IN into a C source OUT defining `const char NAME[]` (default
# pxl_prelude_text): its bytes and a terminating NUL.
if(NOT NAME)
  set(NAME pxl_prelude_text)
endif()
file(READ ${IN} content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," content "${content}")
get_filename_component(base ${IN} NAME)
file(WRITE ${OUT} "/* generated from ${base}; do not edit */\nconst char ${NAME}[] = {${content} 0};\n")
