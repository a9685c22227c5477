# SPDX-License-Identifier: MIT
# Compiles compile-fail case CASE of SOURCE with COMPILER and requires it to fail with MESSAGE in
# its FIRST error line: the sentence a user reads first must name the problem.
#   cmake -DCOMPILER=g++ -DCASE=4 -DMESSAGE="the Model must provide" -DSOURCE=... -DINCLUDE=...
#         -DEIGEN=... -P first_error.cmake
set(includes -I${INCLUDE})
foreach(dir IN LISTS EIGEN)
  list(APPEND includes -isystem ${dir})
endforeach()
execute_process(COMMAND ${COMPILER} -std=c++20 -fsyntax-only -fopenmp ${includes} -DDPTRAIN_CASE=${CASE} ${SOURCE}
                RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(result EQUAL 0)
  message(FATAL_ERROR "case ${CASE} compiled with ${COMPILER}; it must not")
endif()
string(REGEX MATCH "[^\n]* error: [^\n]*" first "${output}")
string(FIND "${first}" "dptrain: " at_prefix)
string(FIND "${first}" "${MESSAGE}" at_message)
if(at_prefix EQUAL -1 OR at_message EQUAL -1)
  message(FATAL_ERROR "case ${CASE} with ${COMPILER}: the first error is\n  ${first}\nnot the sentence "
                      "'dptrain: ... ${MESSAGE}'. Whole output:\n${output}")
endif()
message(STATUS "case ${CASE} with ${COMPILER}: ${first}")
