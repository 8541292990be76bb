// fake_cccl: cuda::mr::any_resource, resource_ref and synchronous_resource_ref
// in CCCL >= 3.3's spelling, as small virtual-dispatch wrappers written for
// rmmgo's tests from CCCL's documented behaviour. Not CCCL. Included by
// <cuda/memory_resource> when FAKE_CCCL_VERSION >= 3003000.
#ifndef FAKE_CCCL_ANY_RESOURCE_H
#define FAKE_CCCL_ANY_RESOURCE_H
#include <cstddef>
#include <memory>
#include <optional>
#include <typeinfo>
#include <type_traits>
#include <utility>

namespace cuda {
namespace mr {
namespace fake {
struct erased {
  virtual ~erased() = default;
  virtual void* allocate(::cuda::stream_ref s, std::size_t b, std::size_t a) = 0;
  virtual void deallocate(::cuda::stream_ref s, void* p, std::size_t b, std::size_t a) noexcept = 0;
  virtual void* allocate_sync(std::size_t b, std::size_t a) = 0;
  virtual void deallocate_sync(void* p, std::size_t b, std::size_t a) noexcept = 0;
  virtual bool equal(const erased& o) const noexcept = 0;
  virtual bool host() const noexcept = 0;
  virtual bool device() const noexcept = 0;
  virtual const std::type_info& type() const noexcept = 0;
  virtual const void* object() const noexcept = 0;
  virtual std::unique_ptr<erased> clone() const = 0;
};
template <class R, bool Own>
struct model final : erased {
  std::conditional_t<Own, R, R*> r;
  template <class A>
  explicit model(A&& a) : r(std::forward<A>(a)) {}
  R& get() noexcept {
    if constexpr (Own) { return r; } else { return *r; }
  }
  const R& get() const noexcept {
    if constexpr (Own) { return r; } else { return *r; }
  }
  void* allocate(::cuda::stream_ref s, std::size_t b, std::size_t a) override { return get().allocate(s, b, a); }
  void deallocate(::cuda::stream_ref s, void* p, std::size_t b, std::size_t a) noexcept override {
    get().deallocate(s, p, b, a);
  }
  void* allocate_sync(std::size_t b, std::size_t a) override { return get().allocate_sync(b, a); }
  void deallocate_sync(void* p, std::size_t b, std::size_t a) noexcept override { get().deallocate_sync(p, b, a); }
  bool equal(const erased& o) const noexcept override {
    return o.type() == typeid(R) && get() == *static_cast<const R*>(o.object());
  }
  bool host() const noexcept override { return ::cuda::mr::has_property<R, host_accessible>; }
  bool device() const noexcept override { return ::cuda::mr::has_property<R, device_accessible>; }
  const std::type_info& type() const noexcept override { return typeid(R); }
  const void* object() const noexcept override { return &get(); }
  std::unique_ptr<erased> clone() const override { return std::make_unique<model<R, true>>(get()); }
};
template <class T>
struct is_erased_wrapper : std::false_type {};
}  // namespace fake

template <class... P>
class resource_ref;
template <class... P>
class synchronous_resource_ref;

template <class... P>
class any_resource {
 public:
  any_resource() = default;
  // As CCCL's __basic_any, the value's movability and copyability are asked
  // before its resource-ness (so a type that converts from an any_resource
  // meets the same recursion it meets with CCCL).
  template <class R, class D = std::decay_t<R>>
    requires(!std::is_same_v<D, any_resource>) && (!fake::is_erased_wrapper<D>::value) &&
            std::is_move_constructible_v<D> && std::is_copy_constructible_v<D> && resource_with<D, P...>
  any_resource(R&& r) : e_(std::make_unique<fake::model<D, true>>(std::forward<R>(r))) {}
  template <class... Q>
  any_resource(const resource_ref<Q...>& r);  // owns a copy of the referenced object
  template <class... Q, std::enable_if_t<!std::is_same_v<any_resource<Q...>, any_resource>, int> = 0>
  any_resource(any_resource<Q...> o) : e_(std::move(o.e_)) {}
  any_resource(const any_resource& o) : e_(o.e_ ? o.e_->clone() : nullptr) {}
  any_resource(any_resource&&) noexcept = default;
  any_resource& operator=(const any_resource& o) {
    e_ = o.e_ ? o.e_->clone() : nullptr;
    return *this;
  }
  any_resource& operator=(any_resource&&) noexcept = default;
  void* allocate(::cuda::stream_ref s, std::size_t b, std::size_t a = alignof(std::max_align_t)) {
    return e_->allocate(s, b, a);
  }
  void deallocate(::cuda::stream_ref s, void* p, std::size_t b, std::size_t a = alignof(std::max_align_t)) noexcept {
    e_->deallocate(s, p, b, a);
  }
  void* allocate_sync(std::size_t b, std::size_t a = alignof(std::max_align_t)) { return e_->allocate_sync(b, a); }
  void deallocate_sync(void* p, std::size_t b, std::size_t a = alignof(std::max_align_t)) noexcept {
    e_->deallocate_sync(p, b, a);
  }
  bool has_value() const noexcept { return e_ != nullptr; }
  friend bool operator==(const any_resource& a, const any_resource& b) noexcept {
    return a.e_ && b.e_ && a.e_->equal(*b.e_);
  }
  friend bool operator!=(const any_resource& a, const any_resource& b) noexcept { return !(a == b); }
  template <class Q, std::enable_if_t<(std::is_same_v<Q, P> || ...), int> = 0>
  friend void get_property(const any_resource&, Q) noexcept {}
  friend bool try_get_property(const any_resource& r, host_accessible) noexcept { return r.e_ && r.e_->host(); }
  fake::erased* erased_() const noexcept { return e_.get(); }

 private:
  template <class...>
  friend class any_resource;
  std::unique_ptr<fake::erased> e_;
};

template <class... P>
class resource_ref {
 public:
  template <class R, class D = std::decay_t<R>,
            std::enable_if_t<!fake::is_erased_wrapper<D>::value && resource_with<D, P...>, int> = 0>
  resource_ref(R& r) : e_(std::make_shared<fake::model<D, false>>(&r)) {}
  template <class... Q>
  resource_ref(any_resource<Q...>& a) : e_(share(a.erased_())) {}
  template <class... Q, std::enable_if_t<!std::is_same_v<resource_ref<Q...>, resource_ref>, int> = 0>
  resource_ref(const resource_ref<Q...>& o) : e_(o.e_) {}
  resource_ref(const resource_ref&) = default;
  resource_ref& operator=(const resource_ref&) = default;
  void* allocate(::cuda::stream_ref s, std::size_t b, std::size_t a = alignof(std::max_align_t)) const {
    return e_->allocate(s, b, a);
  }
  void deallocate(::cuda::stream_ref s, void* p, std::size_t b, std::size_t a = alignof(std::max_align_t)) const noexcept {
    e_->deallocate(s, p, b, a);
  }
  void* allocate_sync(std::size_t b, std::size_t a = alignof(std::max_align_t)) const { return e_->allocate_sync(b, a); }
  void deallocate_sync(void* p, std::size_t b, std::size_t a = alignof(std::max_align_t)) const noexcept {
    e_->deallocate_sync(p, b, a);
  }
  friend bool operator==(const resource_ref& a, const resource_ref& b) noexcept { return a.e_->equal(*b.e_); }
  friend bool operator!=(const resource_ref& a, const resource_ref& b) noexcept { return !(a == b); }
  template <class Q, std::enable_if_t<(std::is_same_v<Q, P> || ...), int> = 0>
  friend void get_property(const resource_ref&, Q) noexcept {}
  friend bool try_get_property(const resource_ref& r, host_accessible) noexcept { return r.e_->host(); }
  fake::erased* erased_() const noexcept { return e_.get(); }

 private:
  template <class...>
  friend class resource_ref;
  template <class...>
  friend class any_resource;
  // A non-owning view of an erased object.
  struct view final : fake::erased {
    fake::erased* t;
    explicit view(fake::erased* x) : t(x) {}
    void* allocate(::cuda::stream_ref s, std::size_t b, std::size_t a) override { return t->allocate(s, b, a); }
    void deallocate(::cuda::stream_ref s, void* p, std::size_t b, std::size_t a) noexcept override {
      t->deallocate(s, p, b, a);
    }
    void* allocate_sync(std::size_t b, std::size_t a) override { return t->allocate_sync(b, a); }
    void deallocate_sync(void* p, std::size_t b, std::size_t a) noexcept override { t->deallocate_sync(p, b, a); }
    bool equal(const erased& o) const noexcept override { return t->equal(o); }
    bool host() const noexcept override { return t->host(); }
    bool device() const noexcept override { return t->device(); }
    const std::type_info& type() const noexcept override { return t->type(); }
    const void* object() const noexcept override { return t->object(); }
    std::unique_ptr<erased> clone() const override { return t->clone(); }
  };
  static std::shared_ptr<fake::erased> share(fake::erased* x) { return std::make_shared<view>(x); }
  std::shared_ptr<fake::erased> e_;
};

template <class... P>
template <class... Q>
any_resource<P...>::any_resource(const resource_ref<Q...>& r) : e_(r.erased_()->clone()) {}

template <class... P>
class synchronous_resource_ref : public resource_ref<P...> {
 public:
  using resource_ref<P...>::resource_ref;
  template <class... Q>
  synchronous_resource_ref(const resource_ref<Q...>& o) : resource_ref<P...>(o) {}
};

namespace fake {
template <class... P>
struct is_erased_wrapper<any_resource<P...>> : std::true_type {};
template <class... P>
struct is_erased_wrapper<resource_ref<P...>> : std::true_type {};
template <class... P>
struct is_erased_wrapper<synchronous_resource_ref<P...>> : std::true_type {};
}  // namespace fake
}  // namespace mr
}  // namespace cuda
#endif
