// Pick devices, load a GGUF model and stream its text with loom's C++ API.
// usage: app-cpp MODEL.gguf [DEVICES] [PROMPT] [N]   (DEVICES "": LOOM_DEVICES, else cpu)
#include <loom/loom.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " MODEL.gguf [DEVICES] [PROMPT] [N]\n";
    return 2;
  }
  const std::string prompt = argc > 3 ? argv[3] : "";
  try {
    auto registry = loom::api::Registry::open();
    auto devices = loom::api::Devices::select(registry, argc > 2 ? argv[2] : "");
    auto model = loom::api::Model::load(devices, argv[1]);
    loom::api::Session session(model);
    std::cerr << "app-cpp: " << argv[1] << " on " << devices.names() << "\n";
    loom::api::GenerateOptions options;
    options.n_predict = argc > 4 ? std::atoi(argv[4]) : 200;
    std::cout << prompt << std::flush;
    session.generate(prompt, options, [](std::string_view piece) {
      std::cout << piece << std::flush;
      return bool(std::cout);  // stop when stdout is gone
    });
    std::cout << "\n";
  } catch (const loom::api::Error& e) {
    std::cerr << "app-cpp: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
