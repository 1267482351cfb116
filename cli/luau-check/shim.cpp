// The C face of Luau's analyzer for native-luau-check (src/lib.rs): a Frontend over sources the
// Rust side hands in, with each module's mode given by the Rust side (which reads the .luaurc
// files through nlc_parse_config), `require` resolved by a Rust callback, and every diagnostic
// handed back through another. Nothing here reads files.

#include "Luau/BuiltinDefinitions.h"
#include "Luau/Config.h"
#include "Luau/ConfigResolver.h"
#include "Luau/Error.h"
#include "Luau/FileResolver.h"
#include "Luau/Frontend.h"

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

extern "C" {

// What a diagnostic is.
enum NlcKind : uint32_t
{
    NLC_TYPE_ERROR = 0,
    NLC_LINT_ERROR = 1,
    NLC_LINT_WARNING = 2,
    // The checker itself failed (a timeout, an internal error): counts as an error.
    NLC_INTERNAL = 3,
};

// A diagnostic of module `module` at 0-based line and column.
typedef void (*nlc_diagnostic_fn)(
    void* user, const char* module, size_t module_len, uint32_t line, uint32_t col, uint32_t kind, const char* msg, size_t msg_len);

// Resolves `path` (a string require) from module `from`, at its 0-based line and column: writes the
// module's name through nlc_set_string(out, ...) and returns 1, or returns 0 (having reported why).
typedef int (*nlc_resolve_fn)(
    void* user, const char* from, size_t from_len, const char* path, size_t path_len, uint32_t line, uint32_t col, void* out);

// One alias of a .luaurc (its name as written, its value).
typedef void (*nlc_alias_fn)(void* user, const char* name, size_t name_len, const char* value, size_t value_len);

// A text handed back (an error).
typedef void (*nlc_text_fn)(void* user, const char* text, size_t len);

typedef struct NlcChecker NlcChecker;
}

namespace
{

struct Callbacks
{
    void* user = nullptr;
    nlc_resolve_fn resolve = nullptr;
};

struct Files : Luau::FileResolver
{
    std::unordered_map<Luau::ModuleName, std::string> sources;
    Callbacks callbacks;

    std::optional<Luau::SourceCode> readSource(const Luau::ModuleName& name) override
    {
        auto it = sources.find(name);
        if (it == sources.end())
            return std::nullopt;
        return Luau::SourceCode{it->second, Luau::SourceCode::Module};
    }

    std::optional<Luau::ModuleInfo> resolveModule(const Luau::ModuleInfo* context, Luau::AstExpr* expr, const Luau::TypeCheckLimits&) override
    {
        const auto* literal = expr->as<Luau::AstExprConstantString>();
        if (literal == nullptr || context == nullptr || callbacks.resolve == nullptr)
            return std::nullopt;
        std::string out;
        const Luau::Position at = expr->location.begin;
        if (!callbacks.resolve(
                callbacks.user, context->name.data(), context->name.size(), literal->value.data, literal->value.size, at.line, at.column, &out))
            return std::nullopt;
        return Luau::ModuleInfo{out};
    }

    std::string getHumanReadableModuleName(const Luau::ModuleName& name) const override
    {
        return name;
    }
};

struct Modes : Luau::ConfigResolver
{
    Luau::Config fallback;
    std::unordered_map<Luau::ModuleName, Luau::Config> configs;

    const Luau::Config& getConfig(const Luau::ModuleName& name, const Luau::TypeCheckLimits&) const override
    {
        auto it = configs.find(name);
        return it == configs.end() ? fallback : it->second;
    }
};

void report(nlc_diagnostic_fn diag, void* user, const std::string& module, const Luau::Location& at, uint32_t kind, const std::string& msg)
{
    diag(user, module.data(), module.size(), at.begin.line, at.begin.column, kind, msg.data(), msg.size());
}

std::string lintMessage(const Luau::LintWarning& w)
{
    return w.text + " (" + Luau::LintWarning::getName(w.code) + ")";
}

} // namespace

struct NlcChecker
{
    Files files;
    Modes modes;
    std::unique_ptr<Luau::Frontend> frontend;

    NlcChecker()
    {
        Luau::FrontendOptions options;
        options.retainFullTypeGraphs = false;
        options.runLintChecks = true;
        frontend = std::make_unique<Luau::Frontend>(Luau::SolverMode::New, &files, &modes, options);
        Luau::unfreeze(frontend->globals.globalTypes);
        Luau::registerBuiltinGlobals(*frontend, frontend->globals);
        Luau::freeze(frontend->globals.globalTypes);
    }
};

extern "C" NlcChecker* nlc_new(void)
{
    try
    {
        return new NlcChecker();
    }
    catch (...)
    {
        return nullptr;
    }
}

extern "C" void nlc_free(NlcChecker* c)
{
    delete c;
}

extern "C" void nlc_set_string(void* out, const char* s, size_t len)
{
    static_cast<std::string*>(out)->assign(s, len);
}

// Loads a definitions file (`declare` statements and exported types) into the global scope.
// Returns 1, or 0 having reported each error against module `name`.
extern "C" int nlc_load_definitions(
    NlcChecker* c, const char* name, size_t name_len, const char* src, size_t src_len, nlc_diagnostic_fn diag, void* user)
{
    const std::string module(name, name_len);
    try
    {
        Luau::unfreeze(c->frontend->globals.globalTypes);
        Luau::LoadDefinitionFileResult r =
            c->frontend->loadDefinitionFile(c->frontend->globals, c->frontend->globals.globalScope, std::string_view(src, src_len), module, false, false);
        Luau::freeze(c->frontend->globals.globalTypes);
        if (r.success)
            return 1;
        for (const auto& e : r.parseResult.errors)
            report(diag, user, module, e.getLocation(), NLC_TYPE_ERROR, e.getMessage());
        if (r.module)
            for (const auto& e : r.module->errors)
                report(diag, user, module, e.location, NLC_TYPE_ERROR, Luau::toString(e));
        if (r.parseResult.errors.empty() && (!r.module || r.module->errors.empty()))
            report(diag, user, module, Luau::Location{}, NLC_INTERNAL, "the definitions did not load");
    }
    catch (const std::exception& e)
    {
        report(diag, user, module, Luau::Location{}, NLC_INTERNAL, e.what());
    }
    return 0;
}

// Parses a .luaurc with Luau's own parser over a config of mode `*mode` (0 nocheck, 1 nonstrict,
// 2 strict), writing its languageMode back to `*mode` and handing each alias to `alias`. Returns
// 1, or 0 having handed the error to `err`.
extern "C" int nlc_parse_config(const char* text, size_t len, uint32_t* mode, nlc_alias_fn alias, nlc_text_fn err, void* user)
{
    try
    {
        Luau::Config config;
        config.mode = *mode == 0 ? Luau::Mode::NoCheck : *mode == 1 ? Luau::Mode::Nonstrict : Luau::Mode::Strict;
        Luau::ConfigOptions options;
        options.aliasOptions = Luau::ConfigOptions::AliasOptions{".luaurc", true};
        if (std::optional<std::string> e = Luau::parseConfig(std::string(text, len), config, options))
        {
            err(user, e->data(), e->size());
            return 0;
        }
        *mode = config.mode == Luau::Mode::NoCheck ? 0 : config.mode == Luau::Mode::Strict ? 2 : 1;
        for (const auto& [name, info] : config.aliases)
            alias(user, info.originalCase.data(), info.originalCase.size(), info.value.data(), info.value.size());
        return 1;
    }
    catch (const std::exception& e)
    {
        err(user, e.what(), strlen(e.what()));
        return 0;
    }
}

// Adds a module (a script or a module file) with the mode its .luaurc files give it (as in
// nlc_parse_config); a `--!strict`/`--!nonstrict`/`--!nocheck` line in it still wins.
extern "C" void nlc_add_source(NlcChecker* c, const char* name, size_t name_len, const char* src, size_t src_len, uint32_t mode)
{
    const std::string module(name, name_len);
    c->files.sources[module] = std::string(src, src_len);
    Luau::Config config;
    config.mode = mode == 0 ? Luau::Mode::NoCheck : mode == 1 ? Luau::Mode::Nonstrict : Luau::Mode::Strict;
    c->modes.configs[module] = std::move(config);
}

// Checks module `name` and whatever it requires (each module is checked once per checker), with
// a time limit per module; reports its type errors and those of the modules first checked for
// it, and its lints.
extern "C" void nlc_check(
    NlcChecker* c, const char* name, size_t name_len, double module_time_limit_s, nlc_resolve_fn resolve, nlc_diagnostic_fn diag, void* user)
{
    const std::string module(name, name_len);
    c->files.callbacks = Callbacks{user, resolve};
    try
    {
        Luau::FrontendOptions options = c->frontend->options;
        options.moduleTimeLimitSec = module_time_limit_s;
        Luau::CheckResult r = c->frontend->check(module, options);
        for (const auto& e : r.errors)
            report(diag, user, e.moduleName, e.location, NLC_TYPE_ERROR, Luau::toString(e));
        for (const auto& w : r.lintResult.errors)
            report(diag, user, module, w.location, NLC_LINT_ERROR, lintMessage(w));
        for (const auto& w : r.lintResult.warnings)
            report(diag, user, module, w.location, NLC_LINT_WARNING, lintMessage(w));
        for (const auto& m : r.timeoutHits)
            report(diag, user, m, Luau::Location{}, NLC_INTERNAL,
                "type checking took longer than " + std::to_string(int(module_time_limit_s)) + " s and stopped; split the module or add annotations");
    }
    catch (const std::exception& e)
    {
        report(diag, user, module, Luau::Location{}, NLC_INTERNAL, std::string("the type checker failed: ") + e.what());
    }
    c->files.callbacks = Callbacks{};
}
