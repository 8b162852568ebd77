# Generates the test models (tiny, small) once; later runs reuse them.
foreach(preset tiny small)
  if(NOT EXISTS "${OUT}/${preset}.gguf")
    execute_process(COMMAND "${MAKE_MODEL}" --preset ${preset} --seed 7 --out "${OUT}/${preset}.gguf"
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "logitaudit-make-model --preset ${preset} failed (${rc})")
    endif()
  endif()
endforeach()
