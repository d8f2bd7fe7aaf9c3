/* Compiled as strict C99 with -Wpedantic -Werror: loom/plugin.h must need
 * nothing but the C standard headers it names. */
#include "loom/plugin.h"

#include <stdio.h>

static const loom_plugin_t *query_ptr_check(void) { return NULL; }

int main(void) {
  loom_tensor_t t;
  loom_plugin_query_fn fn = NULL;
  (void)fn;
  (void)query_ptr_check;
  t.struct_size = sizeof t;
  t.ne[0] = 1;
  if (LOOM_ABI_MAJOR(LOOM_ABI_VERSION) != LOOM_ABI_VERSION_MAJOR) return 1;
  if (sizeof(loom_block_q8_0_t) != 34 || sizeof(loom_block_q4_0_t) != 18) return 1;
  if (LOOM_STRUCT_END(loom_plugin_t, get_extension) > sizeof(loom_plugin_t)) return 1;
  printf("plugin.h ok: ABI %u.%u\n", LOOM_ABI_VERSION_MAJOR, LOOM_ABI_VERSION_MINOR);
  return 0;
}
