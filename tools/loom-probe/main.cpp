// loom-probe: the helper libloom runs to try one plugin file in a
// short-lived child process (registry/probe.hpp). Not meant to be run by
// hand; `loom-probe --fd N FILE` writes its record to fd N.
#include "registry/probe.hpp"

int main(int argc, char** argv) { return loom::registry::probe_child_main(argc, argv); }
