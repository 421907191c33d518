// flag_number: a command-line flag's value as a number, for the v8fe test
// programs (torch_like.cpp, frontend_hosts.cpp).
#pragma once

#include <cerrno>
#include <cstdlib>
#include <string>

namespace v8fe {

// flag_number parses v, flag's value, as a whole decimal number in [lo, hi];
// anything else (no value, trailing bytes, out of range) goes to usage with
// "FLAG: a number, please", and usage does not return.
inline long long flag_number(const char *flag, const char *v, long long lo, long long hi,
                             void (*usage)(const char *why)) {
    char *end = nullptr;
    errno = 0;
    long long n = v ? std::strtoll(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || n < lo || n > hi) {
        usage((std::string(flag) + ": a number, please").c_str());
        std::exit(2);
    }
    return n;
}

} // namespace v8fe
