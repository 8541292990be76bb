#pragma once
namespace thrust { template <class P, class A, class B> bool equal(P const&, A b, A e, B o) { for (; b != e; ++b, ++o) if (!(*b == *o)) return false; return true; } }
