#pragma once
namespace thrust { template <class P, class It, class T> void sequence(P const&, It b, It e, T v) { for (; b != e; ++b, ++v) *b = static_cast<decltype(+*b)>(v); } }
