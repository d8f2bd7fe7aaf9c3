/* The other order: the plugin ABI header first, then the C API. */
#include "loom/plugin.h"
#include "loom/loom.h"

int loom_test_order(void);
int loom_test_order(void) { return (int)LOOM_STATUS_OK + (int)LOOM_DEVICE_KIND_CPU + (int)LOOM_DEVICE_TYPE_CPU; }
