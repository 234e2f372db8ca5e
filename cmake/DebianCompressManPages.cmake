# Run by cpack on the staged package (CPACK_PRE_BUILD_SCRIPTS, cmake/DebianPackage.cmake): man
# pages gzip'ed as Debian's dh_compress does (-9, no name or time stamp), whatever rule installed
# them, since Debian policy (12.1) and lintian want them compressed and `cmake --install` does not.
file(GLOB_RECURSE pages "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/share/man/*")
foreach(page IN LISTS pages)
  if(NOT page MATCHES "\\.gz$" AND NOT IS_SYMLINK "${page}")
    execute_process(COMMAND gzip -9nf "${page}" COMMAND_ERROR_IS_FATAL ANY)
  endif()
endforeach()
