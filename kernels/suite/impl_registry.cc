#include "kernels/suite/impl_registry.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/common/status_macros.h"

namespace dspark {

namespace {

// Registrations arrive from other files' static initialisers in any order; the sorted view is
// built on the first query, after main() has started (or a test's first use).
struct Registry {
  std::vector<std::unique_ptr<ImplInfo>> infos;
  std::vector<Impl> sorted;
  bool frozen = false;
};

Registry& TheRegistry() {
  static Registry* r = new Registry();  // never destroyed: handles may be used during exit
  return *r;
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "dspark impl registry: %s\n", message.c_str());
  std::abort();
}

const ImplInfo* Find(std::string_view name) {
  for (const auto& info : TheRegistry().infos) {
    if (info->name == name) return info.get();
    for (const std::string& a : info->aliases)
      if (a == name) return info.get();
  }
  return nullptr;
}

// The palettes ImplStyle's empty fields are filled from, in order. Colours: Okabe and Ito's
// colour-blind-safe set, then Paul Tol's muted set (yellow left out: unreadable on white).
constexpr const char* kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
                                   "#000000", "#882255", "#44AA99", "#999933", "#332288", "#AA4499",
                                   "#117733", "#661100", "#88CCEE", "#6699CC"};
constexpr const char* kHatches[] = {"//", "\\\\", "xx", "..", "++", "oo", "--", "||", "**", "OO", "\\\\..", "//..", "x.."};
constexpr const char* kMarkers[] = {"o", "s", "D", "v", "^", "P", "X", "<", ">", "p", "h", "*", "d", "H"};

bool IsUnset(const std::string& v) { return v.empty(); }
bool IsUnset(const std::optional<std::string>& v) { return !v.has_value(); }
const std::string& Value(const std::string& v) { return v; }
const std::string& Value(const std::optional<std::string>& v) { return *v; }

// `field` of `info` from `palette`: the first entry no other implementation holds. A colour is
// always unique (past the palette, "#rrggbb" colours spaced by the golden angle in hue); a
// hatch or marker repeats once its palette is spent (the colour still tells them apart).
template <class Field, size_t N>
void Fill(Field ImplStyle::*field, ImplInfo& info, const std::vector<ImplInfo*>& all,
          const char* const (&palette)[N], bool must_be_unique) {
  if (!IsUnset(info.style.*field)) return;
  auto used = [&](const std::string& v) {
    for (const ImplInfo* other : all)
      if (other != &info && !IsUnset(other->style.*field) && Value(other->style.*field) == v) return true;
    return false;
  };
  for (const char* v : palette)
    if (!used(v)) {
      info.style.*field = std::string(v);
      return;
    }
  if (!must_be_unique) {
    info.style.*field = std::string(palette[0]);
    return;
  }
  for (int i = 0;; ++i) {  // hue by the golden angle, saturation and value fixed: distinct colours
    const double h = std::fmod(0.13 + 0.61803398875 * i, 1.0) * 6.0;
    const double c = 0.75 * 0.85, x = c * (1 - std::fabs(std::fmod(h, 2.0) - 1)), m = 0.75 - c;
    double rgb[3] = {0, 0, 0};
    const int sector = static_cast<int>(h);
    const double table[6][3] = {{c, x, 0}, {x, c, 0}, {0, c, x}, {0, x, c}, {x, 0, c}, {c, 0, x}};
    for (int k = 0; k < 3; ++k) rgb[k] = table[sector % 6][k] + m;
    char text[8];
    std::snprintf(text, sizeof text, "#%02X%02X%02X", static_cast<int>(rgb[0] * 255 + 0.5),
                  static_cast<int>(rgb[1] * 255 + 0.5), static_cast<int>(rgb[2] * 255 + 0.5));
    if (!used(text)) {
      info.style.*field = std::string(text);
      return;
    }
  }
}

// Explicit styles first (a clash among them is a registration error), then the empty fields
// from the palettes in (rank, name) order, so the fill does not depend on registration order.
void ResolveStyles(const std::vector<ImplInfo*>& order) {
  int baselines = 0;
  for (const ImplInfo* a : order) {
    baselines += a->role == ImplRole::kBaseline;
    for (const ImplInfo* b : order) {
      if (a >= b) continue;
      if (!a->style.color.empty() && a->style.color == b->style.color)
        Die(absl::StrCat("'", a->name, "' and '", b->name, "' both have the colour ", a->style.color));
      if (!a->style.marker.empty() && a->style.marker == b->style.marker)
        Die(absl::StrCat("'", a->name, "' and '", b->name, "' both have the marker ", a->style.marker));
    }
  }
  if (baselines > 1) Die("more than one implementation has the role baseline");
  for (ImplInfo* info : order) {
    Fill(&ImplStyle::color, *info, order, kColors, /*must_be_unique=*/true);
    Fill(&ImplStyle::hatch, *info, order, kHatches, false);
    Fill(&ImplStyle::marker, *info, order, kMarkers, false);
  }
}

const std::vector<Impl>& Sorted() {
  Registry& r = TheRegistry();
  if (!r.frozen) {
    std::vector<ImplInfo*> order;
    for (const auto& info : r.infos) order.push_back(info.get());
    std::sort(order.begin(), order.end(), [](const ImplInfo* a, const ImplInfo* b) {
      return a->rank != b->rank ? a->rank < b->rank : a->name < b->name;
    });
    ResolveStyles(order);
    for (const ImplInfo* info : order) r.sorted.push_back(Impl(info->name.c_str()));
    r.frozen = true;
  }
  return r.sorted;
}

// absl::string_view is its own type in this Abseil build; this helper stays in std.
std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool RegisterImpl(ImplInfo info) {
  Registry& r = TheRegistry();
  if (r.frozen) Die(absl::StrCat("'", info.name, "' registered after the registry was first read"));
  if (info.name.empty()) Die("an implementation without a name");
  if (info.cpu == nullptr) Die(absl::StrCat("'", info.name, "' has no CPU-emulation entry"));
  if (info.workspace_bytes == nullptr) Die(absl::StrCat("'", info.name, "' has no workspace_bytes"));
  std::vector<std::string> names = info.aliases;
  names.push_back(info.name);
  for (const std::string& n : names)
    if (n.empty() || n == "all" || Find(n) != nullptr)
      Die(absl::StrCat("'", info.name, "': the name '", n, "' is empty, reserved or already registered"));
  r.infos.push_back(std::make_unique<ImplInfo>(std::move(info)));
  return true;
}

Impl Impl::Named(std::string_view name) {
  const ImplInfo* info = Find(name);
  if (info == nullptr) Die(absl::StrCat("no implementation named '", std::string(name), "'"));
  return Impl(info->name.c_str());
}

// Handles made by Named() and ParseImpl() point at the registered name itself, so a pointer
// compare finds them (the check's hot path asks every step); the constants above hold literals
// and take the string compare.
const ImplInfo& Impl::info() const {
  for (const auto& registered : TheRegistry().infos)
    if (registered->name.c_str() == name_) return *registered;
  const ImplInfo* info = name_ == nullptr ? nullptr : Find(name_);
  if (info == nullptr || info->name != name_)
    Die(absl::StrCat("handle '", name_ == nullptr ? "(null)" : name_, "' is not a registered canonical name"));
  return *info;
}

size_t Impl::index() const {
  const std::vector<Impl>& all = Sorted();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].name_ == name_) return i;  // the same handle (see info())
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].name() == name()) return i;
  Die(absl::StrCat("handle '", std::string(name()), "' is not registered"));
}

const std::vector<Impl>& AllImpls() { return Sorted(); }
size_t NumImpls() { return Sorted().size(); }

std::string_view ImplName(Impl impl) { return impl.info().name; }

std::string ImplNameList() {
  std::vector<std::string> parts;
  for (Impl impl : AllImpls()) {
    const ImplInfo& info = impl.info();
    parts.push_back(info.aliases.empty() ? info.name
                                         : absl::StrCat(info.name, " (", absl::StrJoin(info.aliases, ", "), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

std::string ImplHelpText() {
  std::string out;
  for (Impl impl : AllImpls()) {
    const ImplInfo& info = impl.info();
    absl::StrAppend(&out, "  ", info.name);
    if (!info.aliases.empty()) absl::StrAppend(&out, " (also ", absl::StrJoin(info.aliases, ", "), ")");
    absl::StrAppend(&out, ": ", info.description, "\n");
  }
  return out;
}

absl::StatusOr<Impl> ParseImpl(std::string_view name) {
  Sorted();  // freeze: a later registration is a bug
  const ImplInfo* info = Find(name);
  if (info != nullptr) return Impl(info->name.c_str());
  return absl::InvalidArgumentError(
      absl::StrCat("expected an implementation among ", ImplNameList(), "; got '", std::string(name), "'"));
}

// "all" adds every implementation not already listed; naming one twice is an error.
absl::StatusOr<std::vector<Impl>> ParseImplList(std::string_view list) {
  return ParseImplListForModel(list, ModelKind::kV41);
}

const std::vector<Impl>& ImplsOfModel(ModelKind model) {
  static const std::vector<Impl>* lists = [] {
    auto* out = new std::vector<Impl>[2];
    for (Impl impl : AllImpls())
      for (ModelKind m : {ModelKind::kV41, ModelKind::kV4})
        if (ImplRunsOn(impl, m)) out[static_cast<int>(m)].push_back(impl);
    return out;
  }();
  return lists[static_cast<int>(model) == 1 ? 1 : 0];
}

bool ImplRunsOn(Impl impl, ModelKind model) {
  const std::vector<ModelKind>& m = impl.info().models;
  return std::find(m.begin(), m.end(), model) != m.end();
}

std::string AdaptiveVerificationWhatIf(Impl impl) {
  if (impl.info().released_with_adaptive_verification) return "";
  return absl::StrCat("vLLM ", impl.info().vllm_release,
                      " never shipped adaptive verification (0.28.0 on): these results are a what-if");
}

std::string ImplModels(Impl impl) {
  std::string out;
  for (ModelKind m : impl.info().models) absl::StrAppend(&out, out.empty() ? "" : ", ", std::string(ModelName(m)));
  return out;
}

absl::StatusOr<std::vector<Impl>> ParseImplListForModel(std::string_view list, ModelKind model) {
  std::vector<Impl> out;
  std::vector<Impl> named;
  size_t begin = 0;
  while (true) {
    const size_t comma = list.find(',', begin);
    const std::string_view part =
        Trim(list.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin));
    if (part == "all") {
      for (Impl impl : AllImpls())
        if (ImplRunsOn(impl, model) && std::find(out.begin(), out.end(), impl) == out.end()) out.push_back(impl);
    } else {
      DS_ASSIGN_OR_RETURN(const Impl impl, ParseImpl(part));
      if (!ImplRunsOn(impl, model))
        return absl::InvalidArgumentError(absl::StrCat(
            "impl '", std::string(ImplName(impl)), "' (vLLM ", impl.info().vllm_release.empty() ? "-" : impl.info().vllm_release,
            ") builds ", ImplModels(impl), ", not ", std::string(ModelName(model)),
            ": no release shipped that pairing (choose the model with --model ", std::string(ModelFlag(impl.info().models.front())), ")"));
      if (std::find(named.begin(), named.end(), impl) != named.end())
        return absl::InvalidArgumentError(absl::StrCat("impl '", std::string(ImplName(impl)), "' listed twice in '",
                                                       std::string(list), "'"));
      named.push_back(impl);
      if (std::find(out.begin(), out.end(), impl) == out.end()) out.push_back(impl);
    }
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  if (out.empty()) return absl::InvalidArgumentError("expected at least one implementation");
  return out;
}

std::string_view ImplRoleName(ImplRole role) {
  switch (role) {
    case ImplRole::kBaseline: return "baseline";
    case ImplRole::kVllmState: return "vllm-state";
    case ImplRole::kSeedBefore: return "seed-before";
    case ImplRole::kSeedAfter: return "seed-after";
    case ImplRole::kOwn: return "own";
    case ImplRole::kUser: return "user";
  }
  return "user";
}

absl::StatusOr<Impl> BaselineImpl() {
  for (Impl impl : AllImpls())
    if (impl.info().role == ImplRole::kBaseline) return impl;
  return absl::NotFoundError("no registered implementation has the role baseline");
}

std::string_view MetadataExecutionName(MetadataExecution e) {
  return e == MetadataExecution::kRecordedUniformDecode ? "recorded-uniform-decode" : "eager";
}

bool ReadsHostBoundaries(Impl impl) { return impl.info().traits.reads_host_boundaries; }
bool ReadsHostTotals(Impl impl) { return impl.info().traits.reads_host_totals; }
bool GraphCapturable(Impl impl) { return impl.info().traits.graph_capturable; }

}  // namespace dspark
