# fuzz_parse: fuzz target for the front end (front_compile and explain_program on any
# text), included from tests/fuzz/CMakeLists.txt. Normal builds link the built-in driver
# (fuzz_parse SECONDS SEEDS...: random bytes, token soup, token and byte mutations of the
# seeds, deep nesting, injected out-of-memory) and run it for 10 seconds on the examples
# as a smoke test. With clang, `fuzz_parse_libfuzzer` (not built by default) is the
# libFuzzer build:
#   fuzz_parse_libfuzzer -max_total_time=600 -timeout=10 -max_len=65536 corpus/ examples/
# Crashing inputs found so far, with their causes: tests/fuzz/crashes/.
add_executable(fuzz_parse ${CMAKE_CURRENT_LIST_DIR}/fuzz_parse.c)
target_include_directories(fuzz_parse PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(fuzz_parse PRIVATE pxl)

file(GLOB PXL_FUZZ_PARSE_SEEDS ${CMAKE_SOURCE_DIR}/examples/*.pxl ${CMAKE_SOURCE_DIR}/tests/diff/tables.pxl
     ${CMAKE_SOURCE_DIR}/tests/diff/scans.pxl
     ${CMAKE_SOURCE_DIR}/tests/diff/params.pxl ${CMAKE_SOURCE_DIR}/tests/diff/pvalues.pxl
     ${CMAKE_SOURCE_DIR}/tests/diff/outputs.pxl)
add_test(NAME fuzz_parse_smoke COMMAND fuzz_parse 10 ${PXL_FUZZ_PARSE_SEEDS}
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(fuzz_parse_smoke PROPERTIES TIMEOUT 120)

if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  add_executable(fuzz_parse_libfuzzer EXCLUDE_FROM_ALL ${CMAKE_CURRENT_LIST_DIR}/fuzz_parse.c)
  target_compile_definitions(fuzz_parse_libfuzzer PRIVATE PXL_LIBFUZZER)
  target_compile_options(fuzz_parse_libfuzzer PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_parse_libfuzzer PRIVATE -fsanitize=fuzzer)
  target_include_directories(fuzz_parse_libfuzzer PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(fuzz_parse_libfuzzer PRIVATE pxl)
endif()
