#define CATCH_CONFIG_MAIN
#include "zkr_catch.hpp"
