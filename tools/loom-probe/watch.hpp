// The probe helper's watch over what a plugin reads (watch.cpp).
#pragma once

namespace loom::probe {

// From now on, hand every getenv / secure_getenv name ('e'), opendir folder
// ('d') and file fopen'ed for reading ('f', paths made absolute) of any
// code in this process to sink, one call at a time (serialised across
// threads); reads made inside sink are not reported.
void watch_start(void (*sink)(char kind, const char* name));

}  // namespace loom::probe
