def pytest_configure(config):
    # pytest-xdist's marker, so the one `make run` of test_shell_blocks.py serves all of
    # its tests under `--dist loadgroup`; registered here too for runs without xdist.
    config.addinivalue_line("markers", "xdist_group(name): run these tests on one xdist worker")
