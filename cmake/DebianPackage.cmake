# The Debian package, by CPack's DEB generator from the install rules (cmake/InstallRules.cmake):
# `scripts/package` configures the "package" preset (prefix /usr, TCPTUNE_DEB on) and runs cpack
# there. packaging/deb/ holds the package's changelog, copyright, maintainer script and lintian
# overrides; the changelog and the overrides are installed in this configuration only.
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR "TCPTUNE_DEB: the package installs under /usr (CMAKE_INSTALL_PREFIX is ${CMAKE_INSTALL_PREFIX}); "
    "use the \"package\" preset")
endif()
set(TCPTUNE_DEB_DIR ${PROJECT_SOURCE_DIR}/packaging/deb)

# The changelog's newest entry is the version packaged: one that disagrees with project() stops
# the configure, so neither can be bumped alone.
file(STRINGS ${TCPTUNE_DEB_DIR}/changelog _changelog_top LIMIT_COUNT 1)
if(NOT _changelog_top MATCHES "^tcptune \\(${PROJECT_VERSION}\\) ")
  message(FATAL_ERROR "packaging/deb/changelog begins with \"${_changelog_top}\"; "
    "its newest entry must be version ${PROJECT_VERSION} (project() in CMakeLists.txt)")
endif()

# A native package: the changelog is changelog.gz, compressed as Debian's tools do (-n: no name
# or time stamp, so that two builds give the same bytes).
set(TCPTUNE_DEB_CHANGELOG ${CMAKE_CURRENT_BINARY_DIR}/packaging/changelog.gz)
add_custom_command(OUTPUT ${TCPTUNE_DEB_CHANGELOG}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/packaging
  COMMAND gzip -9n -c ${TCPTUNE_DEB_DIR}/changelog > ${TCPTUNE_DEB_CHANGELOG}
  DEPENDS ${TCPTUNE_DEB_DIR}/changelog VERBATIM)
add_custom_target(tcptune_deb_changelog ALL DEPENDS ${TCPTUNE_DEB_CHANGELOG})
install(FILES ${TCPTUNE_DEB_CHANGELOG} DESTINATION ${TCPTUNE_INSTALL_DOCDIR})
install(FILES ${TCPTUNE_DEB_DIR}/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
  RENAME tcptune)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tcptune)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "tcptune maintainers <tcptune@example.org>" CACHE STRING
  "The package's Maintainer field")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES TRUE)
set(CPACK_OUTPUT_FILE_PREFIX ${PROJECT_SOURCE_DIR}/dist)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # tcptune_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
# The dependency is computed by dpkg-shlibdeps from the symbol versions the shim imports (tcptune
# itself is static): libc6 alone, at the shim's glibc floor (cmake/GlibcFloor.cmake).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libunwind8 is dlopened for `callsite = true` backtraces (`tcptune ab` draws its plots itself).
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libunwind8")
# conffiles: /etc/tcptune/policy.toml, the one file under /etc; dpkg keeps the admin's edits across
# upgrades and removes it on purge only. prerm: on removal, names each service `tcptune enable`
# tuned (its drop-in names files the removal deletes). postrm: /var/log/tcptune and those
# drop-ins go on purge.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${TCPTUNE_DEB_DIR}/conffiles ${TCPTUNE_DEB_DIR}/prerm ${TCPTUNE_DEB_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/DebianCompressManPages.cmake)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "TCP tuning for unmodified programs, by LD_PRELOAD")
# The synopsis is the summary; this is the extended description (lines of at most 80 columns).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "libtcptune.so, preloaded into a program, intercepts its socket calls and
applies a TOML policy whose rules match destinations, ports, roles and program
names: TCP_NODELAY, socket buffers sized to the bandwidth-delay product,
heartbeats that keep idle connections' congestion windows open, congestion
control, keepalive, user timeout and more. No code change, rebuild or sysctl
access is needed.

The tcptune command runs programs under the shim (static, Go and musl programs
are tuned from outside, by a seccomp supervisor), explains a policy for this
host, reports on the shim's logs, compares runs with and without a policy, and
injects the shim into Kubernetes manifests.")
include(CPack)
