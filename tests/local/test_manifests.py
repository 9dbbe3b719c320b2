"""Reading manifests: each file through the one bounded YAML loader (size, aliases, depth), each
document named by its file and, in a file of several, its place."""

import pytest
import yaml

from kaos.bounded_yaml import MAX_ALIAS_NODES, MAX_BYTES, MAX_DEPTH, load_all
from kaos.local.manifests import ManifestError, load_manifests
from tests.support.billion_laughs import billion_laughs


def test_each_document_is_named_by_its_file_and_its_place_in_it(tmp_path):
    one = tmp_path / "one.yaml"
    one.write_text(yaml.safe_dump({"kind": "Secret", "metadata": {"name": "a"}}))
    several = tmp_path / "several.yaml"
    several.write_text("kind: Secret\n---\n---\nkind: List\nitems: [{kind: Secret}, {kind: ConfigMap}]\n")
    assert [source for _, source in load_manifests([str(one), str(several)])] == [
        str(one), f"{several} (document 1)", f"{several} (document 3) (items[0])", f"{several} (document 3) (items[1])"]


@pytest.mark.parametrize("text, message", [
    (billion_laughs(), f"its aliases stand for more than {MAX_ALIAS_NODES} nodes (refused at *lol"),
    ("a: &a [1, *a]\n", "the alias *a (line 1, column 11) refers to a node that contains it (a recursive alias)"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"nested deeper than {MAX_DEPTH} levels (line 1, column"),
    ("".join(f"l{i}: &l{i} [*l{i - 1}]\n" if i else "l0: &l0 [x]\n" for i in range(MAX_DEPTH + 1)),
     f"nested deeper than {MAX_DEPTH} levels with its aliases expanded"),
    ("[" * 5000 + "]" * 5000, f"nested deeper than {MAX_DEPTH} levels"),  # never a RecursionError
    ("a: [b\n", "not valid YAML"),
    (b"kind: \xff\n", "not valid YAML: not UTF-8 (invalid start byte at byte 6)"),
])
def test_yaml_past_a_bound_is_refused_naming_the_file_and_the_limit(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ManifestError) as refused:
        load_manifests([str(path)])
    assert str(refused.value).startswith(f"{path}: ") and message in str(refused.value), str(refused.value)


def test_a_file_larger_than_the_limit_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("[" * (MAX_BYTES + 1))  # parsed, it would be another error
    with pytest.raises(ManifestError, match=f"big.yaml: larger than {MAX_BYTES} bytes, the limit of one YAML input"):
        load_manifests([str(path)])


def test_aliases_and_merge_keys_within_the_bounds_load_as_before():
    text = ("env: &env [{name: A, value: '1'}, {name: B, value: '2'}]\n"
            "base: &base {replicas: 1, env: *env}\n"
            "one: {<<: *base, name: one}\ntwo: [*env, *env]\n")
    assert load_all(text, "t.yaml") == list(yaml.safe_load_all(text))
    assert load_all(text, "t.yaml")[0]["one"] == {"replicas": 1, "env": [{"name": "A", "value": "1"},
                                                                         {"name": "B", "value": "2"}], "name": "one"}
