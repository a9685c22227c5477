# SPDX-License-Identifier: MIT
# ctest driver: install dptrain into a scratch prefix, then build and run the consumer project
# against it (find_package), and again with dptrain as a subdirectory (add_subdirectory); as a
# subdirectory, dptrain installs nothing unless DPTRAIN_INSTALL is on.
# Inputs: -DSOURCE_DIR=<dptrain source> -DBINARY_DIR=<dptrain build> -DWORK_DIR=<scratch> -DCXX=<compiler>
#         -DGENERATOR=<CMake generator>, and -DMPIEXEC=<mpiexec> when dptrain was built with its MPI
#         component: then the consumer also asks for COMPONENTS mpi and runs on 2 ranks.
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
  if(MPIEXEC)
    list(APPEND args -DCONSUMER_MPI=ON)
  endif()
  if(mode STREQUAL installed)
    list(APPEND args -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
  else()
    list(APPEND args -DDPTRAIN_SOURCE_DIR=${SOURCE_DIR})
  endif()
  run(${CMAKE_COMMAND} ${args})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/${mode})
  run(${WORK_DIR}/${mode}/consumer)
  if(MPIEXEC)
    run(${MPIEXEC} -n 2 --oversubscribe --bind-to none ${WORK_DIR}/${mode}/consumer_mpi)
  endif()
endforeach()

# A project that adds dptrain as a subdirectory does not install dptrain's files ...
run(${CMAKE_COMMAND} --install ${WORK_DIR}/subdirectory --prefix ${WORK_DIR}/subdirectory-prefix)
file(GLOB_RECURSE installed ${WORK_DIR}/subdirectory-prefix/*)
if(installed)
  message(FATAL_ERROR "dptrain installed files as a subproject without DPTRAIN_INSTALL: ${installed}")
endif()
# ... unless it asks for them (configured and installed only: nothing to build).
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/subdirectory-install -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release -DDPTRAIN_SOURCE_DIR=${SOURCE_DIR} -DDPTRAIN_INSTALL=ON)
run(${CMAKE_COMMAND} --install ${WORK_DIR}/subdirectory-install --prefix ${WORK_DIR}/subdirectory-install-prefix)
foreach(file include/dptrain/dptrain.hpp include/dptrain/core/version.hpp share/cmake/dptrain/dptrainConfig.cmake
             share/cmake/dptrain/dptrainConfigVersion.cmake share/cmake/dptrain/dptrainTargets.cmake)
  if(NOT EXISTS ${WORK_DIR}/subdirectory-install-prefix/${file})
    message(FATAL_ERROR "dptrain did not install ${file} as a subproject with DPTRAIN_INSTALL=ON")
  endif()
endforeach()
