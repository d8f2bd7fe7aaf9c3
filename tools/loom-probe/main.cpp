// loom-probe: the helper libloom runs to try one plugin file in a
// short-lived child process (registry/probe.hpp). Not meant to be run by
// hand; `loom-probe --fd N FILE` writes its record to fd N, with what the
// plugin read (watch.cpp) so that the record is cached only for as long as
// those things stay as they were.
#include "registry/probe.hpp"
#include "tools/loom-probe/watch.hpp"

int main(int argc, char** argv) {
  loom::registry::ProbeWatch watch;
  watch.start = loom::probe::watch_start;
  return loom::registry::probe_child_main(argc, argv, watch);
}
