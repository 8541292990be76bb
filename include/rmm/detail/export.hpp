/* rmm/detail/export.hpp -- rmmgo's rmm/ headers: the namespace macros RMM's
 * headers use. rmmgo's own code, under RMM's names (see rmm/README in
 * docs/rmm-compatibility.md). */
#pragma once
#ifndef RMM_NAMESPACE
#define RMM_NAMESPACE rmm
#endif
#define RMM_EXPORT __attribute__((visibility("default")))
#define RMM_HIDDEN __attribute__((visibility("hidden")))
#define RMM_CONSTEXPR_FRIEND friend
/* rmmgo's rmm/ headers are present; their version is rmmgo's. */
#define RMMGO_RMM_HEADERS 1
