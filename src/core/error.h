#pragma once
// Typed errors thrown at library boundaries; the CLI turns each into one line and an exit code.
#include <stdexcept>
#include <string>

namespace opchain {

// Base of every error opchain throws on purpose; what() is a complete, user-facing sentence.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad or unsupported input file (config.json, safetensors, tokenizer.json, template).
class FormatError : public Error {
 public:
  using Error::Error;
};

// An op, key, dtype or vendor combination that nobody registered.
class UnsupportedOpError : public Error {
 public:
  using Error::Error;
};

// Input the user gave that cannot run (prompt past the context, bad ids, bad arguments).
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

// A vendor plugin that cannot load, or one of its kernels or hooks reporting an error; what() names
// the plugin's path (Note [Vendor ABI] in include/opchain/vendor_abi.h).
class VendorPluginError : public Error {
 public:
  using Error::Error;
};

}  // namespace opchain
