# What `cmake --install` installs, where cmake/InstallLayout.cmake says. The Debian package
# (cmake/DebianPackage.cmake) is this same tree under /usr.

# Stripped unless TCPTUNE_INSTALL_STRIP is off (`cmake --install --strip` strips either way):
# the static tcptune carries 25 MB of debug information, the shim's core 20 MB. First in the
# install script, so that every target's strip step below sees it.
if(TCPTUNE_INSTALL_STRIP)
  install(CODE "set(CMAKE_INSTALL_DO_STRIP TRUE)")
endif()

install(TARGETS tcptune_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The stage dlopens the core from its own directory: both go to the same private directory.
install(TARGETS tcptune tcptune_core LIBRARY DESTINATION ${TCPTUNE_INSTALL_SHIMDIR})
install(DIRECTORY config/presets/ DESTINATION ${TCPTUNE_INSTALL_PRESETDIR} FILES_MATCHING PATTERN "*.toml")
install(PROGRAMS examples/container-entrypoint.sh DESTINATION ${TCPTUNE_INSTALL_DATADIR})
# The shim reads /etc/tcptune/policy.toml whatever the prefix. The example is the built-in
# default written out, so that installing it changes nothing until it is edited; an existing one
# (the admin's) is kept, as dpkg keeps a conffile.
if(TCPTUNE_INSTALL_SYSTEM_POLICY)
  install(CODE "
    set(_policy \"\$ENV{DESTDIR}${TCPTUNE_INSTALL_SYSTEM_POLICY_DIR}/policy.toml\")
    if(EXISTS \"\${_policy}\")
      message(STATUS \"Kept: \${_policy}\")
    else()
      file(INSTALL DESTINATION \"\$ENV{DESTDIR}${TCPTUNE_INSTALL_SYSTEM_POLICY_DIR}\" TYPE FILE
        RENAME policy.toml FILES \"${PROJECT_SOURCE_DIR}/config/system-policy.toml\")
    endif()")
endif()

file(GLOB TCPTUNE_DOCS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES README.md ${TCPTUNE_DOCS} DESTINATION ${TCPTUNE_INSTALL_DOCDIR})
