# cmake -DCC=COMPILER -DPRELUDE=src/ir/prelude.h -P prelude_no_f64.cmake
#
# Preprocesses the prelude as OpenCL C (__OPENCL_VERSION__) with and without the macros
# the OpenCL runtime defines for a device that lacks cl_khr_fp64 / cl_khr_int64_base_atomics.
# Without them the text must mention double and the extensions (so that this test checks
# something); with them it must not: kernels that need neither then build on such devices.
function(preprocess out)
  # -dD keeps the macro definitions (PXR_BIN_INC's atom_inc), -undef drops the host's
  execute_process(COMMAND ${CC} -E -P -dD -undef -x c -D__OPENCL_VERSION__=120 ${ARGN} ${PRELUDE}
                  OUTPUT_VARIABLE text ERROR_VARIABLE errors RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "preprocessing ${PRELUDE} failed: ${errors}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

set(words "double" "cl_khr_fp64" "cl_khr_int64_base_atomics" "atom_inc" "atom_add")
preprocess(full)
preprocess(reduced -DPXR_NO_F64 -DPXR_NO_INT64_ATOMICS)
foreach(w ${words})
  if(NOT full MATCHES "(^|[^A-Za-z0-9_])${w}([^A-Za-z0-9_]|$)")
    message(FATAL_ERROR "the OpenCL prelude does not mention ${w}: this test checks nothing")
  endif()
  if(reduced MATCHES "(^|[^A-Za-z0-9_])${w}([^A-Za-z0-9_]|$)")
    message(FATAL_ERROR "the OpenCL prelude under PXR_NO_F64 / PXR_NO_INT64_ATOMICS mentions ${w}")
  endif()
endforeach()
# the f32 conversions stay
if(NOT reduced MATCHES "pxr_f32_i64")
  message(FATAL_ERROR "the OpenCL prelude under PXR_NO_F64 lacks the f32 conversions")
endif()
message(STATUS "ok")
