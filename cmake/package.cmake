# SPDX-License-Identifier: MIT
# The Debian package of fleetbench, built with `cpack -G DEB` in a build
# tree configured with -DCMAKE_INSTALL_PREFIX=/usr (ansible/README.md): every
# target and file that has an install() rule, i.e. the binaries, the schema
# migrations and the docs. Its Depends line comes from dpkg-shlibdeps, so
# apt installs the runtime libraries with it and hosts need no compiler.
include(GNUInstallDirs)

install(FILES ${PROJECT_SOURCE_DIR}/README.md
	DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
	DESTINATION ${CMAKE_INSTALL_DOCDIR}
	FILES_MATCHING PATTERN "*.md")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fleetbench)
set(CPACK_PACKAGE_VENDOR fleetbench)
set(CPACK_PACKAGE_CONTACT "fleetbench <dev@fleetbench.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
	"huge page and io_uring capability probe, benchmarks and fleet collector")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
	"fleetbench-agent probes what a host's kernel and hypervisor allow \
(transparent and static huge pages, io_uring) and benchmarks it; \
fleetbench-collector stores the agents' reports in PostgreSQL.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The collector has its schema directory compiled in from the install
# prefix, so the package must install under that same prefix (CPack's DEB
# default would be /usr whatever the build was configured with).
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
include(CPack)
