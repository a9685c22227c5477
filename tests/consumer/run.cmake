# SPDX-License-Identifier: MIT
# ctest driver: install dptrain into a scratch prefix, then build and run the consumer project
# against it (find_package), and again with dptrain as a subdirectory (add_subdirectory).
# Inputs: -DSOURCE_DIR=<dptrain source> -DBINARY_DIR=<dptrain build> -DWORK_DIR=<scratch> -DCXX=<compiler>
#         -DGENERATOR=<CMake generator>
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix)
foreach(mode installed subdirectory)
  set(args -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/${mode} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
           -DCMAKE_BUILD_TYPE=Release)
  if(mode STREQUAL installed)
    list(APPEND args -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
  else()
    list(APPEND args -DDPTRAIN_SOURCE_DIR=${SOURCE_DIR})
  endif()
  run(${CMAKE_COMMAND} ${args})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/${mode})
  run(${WORK_DIR}/${mode}/consumer)
endforeach()
