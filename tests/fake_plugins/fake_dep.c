/* A dependency of libloom-missingdep.so, built into a folder that is on no
 * search path, so dlopen of the plugin fails naming this library. */
int loomfake_dep_answer(void) { return 42; }
