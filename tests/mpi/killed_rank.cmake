# SPDX-License-Identifier: MIT
# Runs killed_rank under mpiexec and checks the documented outcome (docs/distributed.md): when a
# rank dies by a signal, Open MPI's mpiexec notices, ends the other ranks and exits non-zero, well
# within LIMIT seconds (the test fails if the job is still running then: a hang).
# -DMPIEXEC=… -DPROGRAM=… -DRANKS=… -DLIMIT=…
string(TIMESTAMP started "%s")
execute_process(COMMAND ${MPIEXEC} -n ${RANKS} --oversubscribe --bind-to none ${PROGRAM}
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output TIMEOUT ${LIMIT})
string(TIMESTAMP ended "%s")
math(EXPR seconds "${ended} - ${started}")
message("mpiexec exited with '${status}' after ${seconds} s:\n${output}")
if(NOT status MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end by itself within ${LIMIT} s: ${status}")
endif()
if(status EQUAL 0)
  message(FATAL_ERROR "mpiexec exited 0 although a rank was killed")
endif()
if(NOT output MATCHES "signal 9")
  message(FATAL_ERROR "mpiexec did not report the rank killed by signal 9")
endif()
