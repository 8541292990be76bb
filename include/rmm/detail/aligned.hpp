/* rmm/detail/aligned.hpp -- RMM's older spellings of the alignment helpers. */
#pragma once
#include <rmm/aligned.hpp>
