/* Pick devices, load a GGUF model and stream its text with loom's C API.
 * usage: app-c MODEL.gguf [DEVICES] [PROMPT] [N]   (DEVICES "": LOOM_DEVICES, else cpu) */
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>

static bool print_piece(const char *piece, size_t length, void *user_data) {
  (void)user_data;
  fwrite(piece, 1, length, stdout);
  return fflush(stdout) == 0; /* stop when stdout is gone */
}

int main(int argc, char **argv) {
  loom_registry_t *registry = NULL;
  loom_devices_t *devices = NULL;
  loom_model_t *model = NULL;
  loom_session_t *session = NULL;
  loom_generate_params_t params;
  const char *prompt = argc > 3 ? argv[3] : "";
  loom_status_t *st;
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.gguf [DEVICES] [PROMPT] [N]\n", argv[0]);
    return 2;
  }
  loom_generate_params_init(&params);
  params.n_predict = argc > 4 ? atoi(argv[4]) : 200;
  params.on_piece = print_piece;
  st = loom_registry_open(NULL, &registry);
  if (!st) st = loom_devices_select(registry, argc > 2 ? argv[2] : NULL, &devices);
  if (!st) st = loom_model_load(devices, argv[1], NULL, &model);
  if (!st) st = loom_session_create(model, NULL, &session);
  if (!st) {
    fprintf(stderr, "app-c: %s on %s\n", argv[1], loom_devices_get(devices, 0)->name);
    fputs(prompt, stdout);
    st = loom_session_generate(session, prompt, &params, NULL);
    putchar('\n');
  }
  if (st) fprintf(stderr, "app-c: %s\n", loom_status_message(st));
  loom_session_free(session);
  loom_model_free(model);
  loom_devices_free(devices);
  loom_registry_close(registry);
  loom_status_free(st);
  return st ? 1 : 0;
}
