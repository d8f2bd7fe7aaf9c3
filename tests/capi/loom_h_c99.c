/* include/loom/loom.h compiles as strict C99 on its own, and beside the
 * plugin ABI header in either order (they share the status types); a C
 * program links libloom and sees the version it was compiled against. */
#include "loom/loom.h"
#include "loom/plugin.h"
#include "loom/loom.h"

#include <stdio.h>

int main(void) {
  loom_status_t *st = NULL;
  loom_registry_t *reg = NULL;
  if (loom_api_version() != LOOM_API_VERSION) {
    fprintf(stderr, "library API %u, header %u\n", (unsigned)loom_api_version(), (unsigned)LOOM_API_VERSION);
    return 1;
  }
  /* A bad argument is a status with a message, even from C. */
  st = loom_registry_open(NULL, NULL);
  if (loom_status_code(st) != LOOM_STATUS_INVALID_ARGUMENT || loom_status_message(st)[0] == '\0') return 1;
  loom_status_free(st);
  (void)reg;
  printf("loom %s, C API %u.%u\n", loom_version_string(), (unsigned)LOOM_API_MAJOR(loom_api_version()),
         (unsigned)LOOM_API_MINOR(loom_api_version()));
  return 0;
}
