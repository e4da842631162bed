#!/usr/bin/env python3
"""The library's public API, one line per item, from rustdoc's JSON output.

Reads `target/doc/fluss_datafusion.json` (written by `scripts/public-api.sh`) and
prints every item reachable from the crate root under the path a user names it by:
modules, re-exports, functions with their signatures, structs with their public
fields, enum variants, trait items, inherent methods, and the traits a type
implements (auto traits and blanket impls left out, as `cargo public-api` omits
them with `--omit auto-trait-impls,blanket-impls`). The output is sorted, so a
change to the API is a readable diff of `public-api.txt`.
"""

import json
import sys

SUPPORTED_FORMATS = range(50, 70)


class Api:
    def __init__(self, doc):
        if doc.get("format_version") not in SUPPORTED_FORMATS:
            sys.exit(f"rustdoc JSON format {doc.get('format_version')} is not one this script reads")
        self.index = doc["index"]
        self.paths = doc["paths"]
        self.lines = set()
        self.seen = set()

    def item(self, item_id):
        return self.index.get(str(item_id))

    # --- types -------------------------------------------------------------------

    def path_name(self, path):
        summary = self.paths.get(str(path.get("id")))
        name = "::".join(summary["path"]) if summary else path["path"].replace("$crate::", "")
        return name + self.generic_args(path.get("args"))

    def generic_args(self, args):
        if not args:
            return ""
        if "angle_bracketed" in args:
            parts = [self.generic_arg(a) for a in args["angle_bracketed"]["args"]]
            for constraint in args["angle_bracketed"]["constraints"]:
                binding = constraint["binding"]
                if "equality" in binding:
                    value = binding["equality"]
                    rendered = self.ty(value["type"]) if "type" in value else str(value)
                    parts.append(f"{constraint['name']} = {rendered}")
                else:
                    parts.append(f"{constraint['name']}: {self.bounds(binding['constraint'])}")
            return f"<{', '.join(parts)}>" if parts else ""
        if "parenthesized" in args:
            p = args["parenthesized"]
            out = f"({', '.join(self.ty(t) for t in p['inputs'])})"
            return out + (f" -> {self.ty(p['output'])}" if p.get("output") else "")
        return ""

    def generic_arg(self, arg):
        if arg == "infer":
            return "_"
        if "type" in arg:
            return self.ty(arg["type"])
        if "lifetime" in arg:
            return arg["lifetime"]
        if "const" in arg:
            return arg["const"].get("expr", "_")
        return "?"

    def bounds(self, bounds):
        rendered = []
        for bound in bounds:
            if "trait_bound" in bound:
                tb = bound["trait_bound"]
                prefix = "?" if tb.get("modifier") == "maybe" else ""
                rendered.append(prefix + self.path_name(tb["trait"]))
            elif "outlives" in bound:
                rendered.append(bound["outlives"])
            elif "use" in bound:
                rendered.append("use<..>")
        return " + ".join(rendered)

    def ty(self, t):
        if t is None:
            return "()"
        (kind, value), = t.items()
        if kind == "resolved_path":
            return self.path_name(value)
        if kind in ("primitive", "generic"):
            return value
        if kind == "borrowed_ref":
            lifetime = f"{value['lifetime']} " if value.get("lifetime") else ""
            mutable = "mut " if value["is_mutable"] else ""
            return f"&{lifetime}{mutable}{self.ty(value['type'])}"
        if kind == "raw_pointer":
            return f"*{'mut' if value['is_mutable'] else 'const'} {self.ty(value['type'])}"
        if kind == "tuple":
            return f"({', '.join(self.ty(x) for x in value)})"
        if kind == "slice":
            return f"[{self.ty(value)}]"
        if kind == "array":
            return f"[{self.ty(value['type'])}; {value['len']}]"
        if kind == "impl_trait":
            return f"impl {self.bounds(value)}"
        if kind == "dyn_trait":
            traits = [self.path_name(p["trait"]) for p in value["traits"]]
            if value.get("lifetime"):
                traits.append(value["lifetime"])
            return f"dyn {' + '.join(traits)}"
        if kind == "qualified_path":
            trait = f" as {self.path_name(value['trait'])}" if value.get("trait") else ""
            return f"<{self.ty(value['self_type'])}{trait}>::{value['name']}"
        if kind == "function_pointer":
            return "fn" + self.signature(value["sig"])
        if kind == "infer":
            return "_"
        return kind

    def generics(self, generics):
        params = []
        for param in generics["params"]:
            kind = param["kind"]
            if "lifetime" in kind:
                params.append(param["name"])
            elif "type" in kind:
                if kind["type"].get("is_synthetic"):
                    continue
                bounds = self.bounds(kind["type"]["bounds"])
                params.append(param["name"] + (f": {bounds}" if bounds else ""))
            elif "const" in kind:
                params.append(f"const {param['name']}: {self.ty(kind['const']['type'])}")
        return f"<{', '.join(params)}>" if params else ""

    def signature(self, sig):
        inputs = []
        for name, t in sig["inputs"]:
            if name == "self":
                inputs.append(self.ty(t).replace("&Self", "&self").replace("&mut Self", "&mut self")
                              if t != {"generic": "Self"} else "self")
            else:
                inputs.append(f"{name}: {self.ty(t)}")
        output = f" -> {self.ty(sig['output'])}" if sig.get("output") else ""
        return f"({', '.join(inputs)}){output}"

    def function(self, path, f):
        header = f["header"]
        qualifiers = "".join(
            q for q, on in (("const ", header["is_const"]), ("async ", header["is_async"]),
                            ("unsafe ", header["is_unsafe"])) if on)
        return f"pub {qualifiers}fn {path}{self.generics(f['generics'])}{self.signature(f['sig'])}"

    # --- items -------------------------------------------------------------------

    def walk(self, path, item_id):
        item = self.item(item_id)
        if item is None:
            return
        key = (path, item_id)
        if key in self.seen:
            return
        self.seen.add(key)
        (kind, inner), = item["inner"].items()
        if kind == "module":
            self.lines.add(f"pub mod {path}")
            for child in inner["items"]:
                self.child(path, child)
        elif kind == "function":
            self.lines.add(self.function(path, inner))
        elif kind == "struct":
            self.lines.add(f"pub struct {path}{self.generics(inner['generics'])}")
            struct_kind = inner["kind"]
            if "plain" in struct_kind:
                for field_id in struct_kind["plain"]["fields"]:
                    field = self.item(field_id)
                    if field and field["visibility"] == "public":
                        self.lines.add(f"pub {path}::{field['name']}: {self.ty(field['inner']['struct_field'])}")
            elif "tuple" in struct_kind:
                fields = [self.item(f) for f in struct_kind["tuple"] if f is not None]
                types = [self.ty(f["inner"]["struct_field"]) for f in fields if f]
                self.lines.add(f"pub struct {path}({', '.join(types)})")
            self.impls(path, inner["impls"], item_id)
        elif kind == "enum":
            self.lines.add(f"pub enum {path}{self.generics(inner['generics'])}")
            for variant_id in inner["variants"]:
                variant = self.item(variant_id)
                if variant:
                    self.lines.add(f"pub {path}::{variant['name']}{self.variant_fields(variant)}")
            self.impls(path, inner["impls"], item_id)
        elif kind == "trait":
            bounds = self.bounds(inner["bounds"])
            self.lines.add(f"pub trait {path}{self.generics(inner['generics'])}" + (f": {bounds}" if bounds else ""))
            for member_id in inner["items"]:
                self.member(path, self.item(member_id))
        elif kind == "constant":
            self.lines.add(f"pub const {path}: {self.ty(inner['type'])}")
        elif kind == "static":
            self.lines.add(f"pub static {path}: {self.ty(inner['type'])}")
        elif kind == "type_alias":
            self.lines.add(f"pub type {path}{self.generics(inner['generics'])} = {self.ty(inner['type'])}")
        elif kind == "macro":
            self.lines.add(f"macro {path}")
        elif kind == "union":
            self.lines.add(f"pub union {path}")

    def child(self, parent, child_id):
        child = self.item(child_id)
        if child is None:
            return
        if "use" in child["inner"]:
            use = child["inner"]["use"]
            target = self.item(use["id"]) if use.get("id") is not None else None
            if use["is_glob"]:
                if target and "module" in target["inner"]:
                    for grandchild in target["inner"]["module"]["items"]:
                        self.child(parent, grandchild)
                elif target and "enum" in target["inner"]:
                    for variant in target["inner"]["enum"]["variants"]:
                        self.walk(f"{parent}::{self.item(variant)['name']}", variant)
                else:
                    self.lines.add(f"pub use {parent}::{use['source']}::*")
            elif target is None:
                self.lines.add(f"pub use {parent}::{use['name']} = {use['source']}")
            else:
                self.walk(f"{parent}::{use['name']}", use["id"])
        elif child.get("name"):
            self.walk(f"{parent}::{child['name']}", child_id)

    def variant_fields(self, variant):
        kind = variant["inner"]["variant"]["kind"]
        if kind == "plain":
            return ""
        if "tuple" in kind:
            fields = [self.item(f) for f in kind["tuple"] if f is not None]
            return f"({', '.join(self.ty(f['inner']['struct_field']) for f in fields if f)})"
        fields = [self.item(f) for f in kind["struct"]["fields"]]
        return " { " + ", ".join(f"{f['name']}: {self.ty(f['inner']['struct_field'])}" for f in fields if f) + " }"

    def member(self, path, member):
        if member is None:
            return
        (kind, inner), = member["inner"].items()
        name = f"{path}::{member['name']}"
        if kind == "function":
            self.lines.add(self.function(name, inner))
        elif kind == "assoc_type":
            self.lines.add(f"pub type {name}" + (f" = {self.ty(inner['type'])}" if inner.get("type") else ""))
        elif kind == "assoc_const":
            self.lines.add(f"pub const {name}: {self.ty(inner['type'])}")

    def impls(self, path, impl_ids, type_id=None):
        for impl_id in impl_ids:
            impl = self.item(impl_id)
            if impl is None:
                continue
            inner = impl["inner"]["impl"]
            if inner.get("is_synthetic") or inner.get("blanket_impl") is not None:
                continue
            if inner.get("trait") is None:
                for member_id in inner["items"]:
                    member = self.item(member_id)
                    if member and member["visibility"] == "public":
                        self.member(path, member)
            else:
                negative = "!" if inner.get("is_negative") else ""
                for_type = inner.get("for", {})
                # An impl for another type that names this one (`From<Self> for X`).
                own = for_type.get("resolved_path", {}).get("id") == type_id
                target = path if own else self.ty(for_type)
                self.lines.add(f"impl {negative}{self.path_name(inner['trait'])} for {target}")


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else "target/doc/fluss_datafusion.json"
    with open(source) as f:
        doc = json.load(f)
    api = Api(doc)
    root = api.item(doc["root"])
    crate = root["name"]
    for child in root["inner"]["module"]["items"]:
        api.child(crate, child)
    for line in sorted(api.lines):
        print(line)


if __name__ == "__main__":
    main()
