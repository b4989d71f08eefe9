#include <cstdio>

#include <CLI/CLI.hpp>

#include "shoal/core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"shoal: train small neural networks at hardware speed on CPUs"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
