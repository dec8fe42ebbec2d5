//! The manifests in `deploy/` agree with the code: the CRD's schema holds every field the
//! template types read, and the Role grants `get` on named objects only.

use std::path::{Path, PathBuf};

use pullcheck_kube::{
    TEMPLATE_GROUP, TEMPLATE_KIND, TEMPLATE_PLURAL, TEMPLATE_VERSION, read_template_file,
};
use serde_json::Value;

fn deploy(name: &str) -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every key of `value` is a property of `schema`, recursively, except where the schema
/// keeps unknown fields or is a map of strings.
fn assert_covered(value: &Value, schema: &Value, path: &str) {
    if schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true) {
        return;
    }
    match value {
        Value::Object(map) => {
            assert_eq!(
                schema["type"], "object",
                "{path} is an object in the schema"
            );
            if schema.get("additionalProperties").is_some() {
                return;
            }
            for (key, inner) in map {
                let property = &schema["properties"][key];
                assert!(
                    !property.is_null(),
                    "{path}.{key} is missing from the CRD schema"
                );
                assert_covered(inner, property, &format!("{path}.{key}"));
            }
        }
        Value::Array(items) => {
            assert_eq!(schema["type"], "array", "{path} is an array in the schema");
            for item in items {
                assert_covered(item, &schema["items"], &format!("{path}[]"));
            }
        }
        Value::String(_) => assert_eq!(schema["type"], "string", "{path}"),
        Value::Bool(_) => assert_eq!(schema["type"], "boolean", "{path}"),
        Value::Number(_) => assert_eq!(schema["type"], "integer", "{path}"),
        Value::Null => {}
    }
}

#[test]
fn the_crd_schema_covers_every_template_field() {
    let crd: Value =
        serde_saphyr::from_str(&deploy("pipelinepodstemplate-crd.yaml")).expect("yaml");
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(crd["kind"], "CustomResourceDefinition");
    assert_eq!(
        crd["metadata"]["name"],
        format!("{TEMPLATE_PLURAL}.{TEMPLATE_GROUP}")
    );
    assert_eq!(crd["spec"]["group"], TEMPLATE_GROUP);
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(crd["spec"]["names"]["kind"], TEMPLATE_KIND);
    assert_eq!(crd["spec"]["names"]["plural"], TEMPLATE_PLURAL);
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["name"], TEMPLATE_VERSION);
    let schema = &version["schema"]["openAPIV3Schema"];
    assert_eq!(schema["properties"]["spec"]["required"][0], "template");

    let pod_spec = &schema["properties"]["spec"]["properties"]["template"]["properties"]["spec"];
    assert_eq!(
        pod_spec["properties"]["serviceAccountName"]["type"],
        "string"
    );
    let secrets = &pod_spec["properties"]["imagePullSecrets"];
    assert_eq!(secrets["type"], "array");
    assert_eq!(secrets["items"]["properties"]["name"]["type"], "string");

    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/template-full.yaml");
    let template = read_template_file(&fixture).expect("template");
    let value = serde_json::to_value(&template).expect("json");
    let mut spec_only = value.clone();
    // Object metadata is ObjectMeta, which the API server handles itself.
    spec_only["metadata"] = Value::Object(Default::default());
    assert_covered(&spec_only, schema, "");
}

#[test]
fn the_role_grants_get_on_named_objects_only() {
    let docs: Vec<Value> = serde_saphyr::from_multiple(&deploy("rbac.yaml")).expect("yaml");
    assert_eq!(docs.len(), 2);
    let role = &docs[0];
    assert_eq!(role["kind"], "Role");
    let mut resources = Vec::new();
    for rule in role["rules"].as_array().expect("rules") {
        assert_eq!(rule["verbs"], serde_json::json!(["get"]), "{rule}");
        assert!(
            rule["resourceNames"]
                .as_array()
                .is_some_and(|n| !n.is_empty()),
            "every rule names its objects: {rule}"
        );
        for r in rule["resources"].as_array().expect("resources") {
            resources.push(r.as_str().expect("string").to_owned());
        }
    }
    resources.sort();
    assert_eq!(
        resources,
        ["pipelinepodstemplates", "secrets", "serviceaccounts"]
    );
    let binding = &docs[1];
    assert_eq!(binding["kind"], "RoleBinding");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(
        binding["metadata"]["namespace"],
        role["metadata"]["namespace"]
    );
}
