//! The manifests in `deploy/` agree with the code: the CRD's schema holds every field the
//! template types read, the Role grants `get` on named objects only, and the files can be
//! given to `kubectl apply -f -` together (docs/admission.md's walk-through does).

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

/// Every document of every `deploy/service/*.yaml`, by kind.
fn service_documents() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/service");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    let mut docs = Vec::new();
    for name in names {
        let text = deploy(&format!("service/{name}"));
        let parsed: Vec<Value> =
            serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        for doc in parsed {
            // Required of every object (Kubernetes API reference, ObjectMeta).
            assert!(doc["apiVersion"].is_string(), "{name}: apiVersion");
            assert!(doc["kind"].is_string(), "{name}: kind");
            assert!(doc["metadata"]["name"].is_string(), "{name}: metadata.name");
            assert!(
                doc["metadata"]["namespace"].is_string(),
                "{name}: every object names its namespace"
            );
            docs.push(doc);
        }
    }
    docs
}

fn one<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = docs.iter().filter(|d| d["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "exactly one {kind} in deploy/service");
    found[0]
}

#[test]
fn the_service_manifests_are_complete_and_agree() {
    let docs = service_documents();
    let mut kinds: Vec<(String, String)> = docs
        .iter()
        .map(|d| {
            (
                d["apiVersion"].as_str().expect("string").to_owned(),
                d["kind"].as_str().expect("string").to_owned(),
            )
        })
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("apps/v1", "Deployment"),
            ("policy/v1", "PodDisruptionBudget"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("v1", "Service"),
            ("v1", "ServiceAccount"),
        ]
        .map(|(a, k)| (a.to_owned(), k.to_owned()))
    );

    let deployment = one(&docs, "Deployment");
    let spec = &deployment["spec"];
    assert_eq!(spec["replicas"], 2);
    let labels = &spec["template"]["metadata"]["labels"];
    for (key, value) in spec["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels")
    {
        assert_eq!(
            &labels[key], value,
            "the template carries selector label {key}"
        );
    }
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert!(c["name"].is_string() && c["image"].is_string());
    assert_eq!(c["args"][0], "serve");
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert!(c["resources"]["requests"]["cpu"].is_string());
    assert!(c["resources"]["requests"]["memory"].is_string());
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    // A non-loopback address needs the token file and TLS (docs/service.md).
    for flag in ["--tls-cert=", "--tls-key=", "--listen=0.0.0.0:"] {
        assert!(
            c["args"]
                .as_array()
                .expect("args")
                .iter()
                .any(|a| a.as_str().is_some_and(|a| a.starts_with(flag))),
            "{flag}"
        );
    }
    assert_eq!(c["livenessProbe"]["httpGet"]["scheme"], "HTTPS");
    assert_eq!(c["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    let port = &c["ports"][0];
    assert_eq!(c["livenessProbe"]["httpGet"]["port"], port["name"]);
    // The token file the args name is mounted from a volume.
    let token_arg = c["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .find_map(|a| a.strip_prefix("--api-token-file="))
        .expect("--api-token-file");
    let mount = c["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .find(|m| token_arg.starts_with(m["mountPath"].as_str().expect("mountPath")))
        .expect("the token file's directory is mounted");
    assert!(
        pod["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .any(|v| v["name"] == mount["name"] && v["secret"]["secretName"].is_string())
    );

    let account = one(&docs, "ServiceAccount");
    assert_eq!(pod["serviceAccountName"], account["metadata"]["name"]);

    let service = one(&docs, "Service");
    assert_eq!(service["spec"]["selector"], spec["selector"]["matchLabels"]);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], port["name"]);

    let pdb = one(&docs, "PodDisruptionBudget");
    assert_eq!(pdb["spec"]["selector"], spec["selector"]);
    assert_eq!(pdb["spec"]["minAvailable"], 1);

    let role = one(&docs, "Role");
    for rule in role["rules"].as_array().expect("rules") {
        assert_eq!(rule["verbs"], serde_json::json!(["get"]), "{rule}");
        assert!(
            rule["resourceNames"]
                .as_array()
                .is_some_and(|n| !n.is_empty()),
            "every rule names its objects: {rule}"
        );
    }
    let binding = one(&docs, "RoleBinding");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(binding["subjects"][0]["name"], account["metadata"]["name"]);
    assert_eq!(
        binding["subjects"][0]["namespace"],
        account["metadata"]["namespace"]
    );
}

#[test]
fn the_service_image_is_multi_stage_and_runs_as_non_root() {
    let dockerfile = deploy("service/Dockerfile");
    let froms: Vec<&str> = dockerfile
        .lines()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    // A build stage, the Vela plugin's image, and the service's (the default target).
    assert_eq!(froms.len(), 3, "build, vela-plugin and service stages");
    assert!(froms[1].contains("distroless") && froms[1].ends_with(" AS vela-plugin"));
    assert!(froms[2].contains("distroless"), "{}", froms[2]);
    let users: Vec<&str> = dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("USER "))
        .collect();
    assert_eq!(users.len(), 2, "each runtime stage sets its user");
    for user in users {
        assert!(!user.starts_with('0') && user != "root", "USER {user}");
    }
    assert!(dockerfile.contains(r#"ENTRYPOINT ["/usr/local/bin/pullcheck", "vela-plugin"]"#));
    assert!(dockerfile.contains("cargo build --release --locked -p pullcheck-cli"));
}

/// Every document of every `deploy/admission/*.yaml`, each with apiVersion, kind and name.
fn admission_documents() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/admission");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    let mut docs = Vec::new();
    for name in names {
        let text = deploy(&format!("admission/{name}"));
        let parsed: Vec<Value> =
            serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        for doc in parsed {
            assert!(doc["apiVersion"].is_string(), "{name}: apiVersion");
            assert!(doc["kind"].is_string(), "{name}: kind");
            assert!(doc["metadata"]["name"].is_string(), "{name}: metadata.name");
            docs.push(doc);
        }
    }
    docs
}

#[test]
fn the_admission_manifests_are_complete_and_agree() {
    let docs = admission_documents();
    let mut kinds: Vec<String> = docs
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d["apiVersion"].as_str().expect("s"),
                d["kind"].as_str().expect("s")
            )
        })
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration",
            "apps/v1 Deployment",
            "networking.k8s.io/v1 NetworkPolicy",
            "rbac.authorization.k8s.io/v1 ClusterRole",
            "rbac.authorization.k8s.io/v1 ClusterRoleBinding",
            "v1 Service",
            "v1 ServiceAccount",
        ]
    );
    let find = |kind: &str| -> &Value {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("{kind}"))
    };
    let config = find("ValidatingWebhookConfiguration");
    let service = find("Service");
    let webhooks = config["webhooks"].as_array().expect("webhooks");
    let mut paths = Vec::new();
    for hook in webhooks {
        let name = hook["name"].as_str().expect("name");
        // Required fields of admissionregistration.k8s.io/v1 ValidatingWebhook.
        assert_eq!(
            hook["admissionReviewVersions"],
            serde_json::json!(["v1"]),
            "{name}"
        );
        assert_eq!(hook["sideEffects"], "None", "{name}");
        assert_eq!(
            hook["failurePolicy"], "Ignore",
            "{name}: never blocks the cluster"
        );
        assert_eq!(hook["timeoutSeconds"], 10, "{name}");
        let target = &hook["clientConfig"]["service"];
        assert_eq!(target["name"], service["metadata"]["name"], "{name}");
        assert_eq!(
            target["namespace"], service["metadata"]["namespace"],
            "{name}"
        );
        assert_eq!(
            target["port"], service["spec"]["ports"][0]["port"],
            "{name}"
        );
        assert!(
            hook["clientConfig"]["caBundle"].is_string(),
            "{name}: caBundle"
        );
        paths.push(target["path"].as_str().expect("path").to_owned());
        // kube-system and the webhook's own namespace are never sent.
        let expressions = hook["namespaceSelector"]["matchExpressions"]
            .as_array()
            .expect("matchExpressions");
        let excluded = expressions
            .iter()
            .find(|e| e["key"] == "kubernetes.io/metadata.name")
            .expect("a name selector");
        assert_eq!(excluded["operator"], "NotIn", "{name}");
        let values = excluded["values"].to_string();
        assert!(values.contains("kube-system"), "{name}");
        assert!(values.contains("<pullcheck-namespace>"), "{name}");
        assert!(
            expressions
                .iter()
                .any(|e| e["key"] == "pullcheck.dev/admission"),
            "{name}: the mode label"
        );
        // Rules: pods (and their ephemeral containers) and the six workload kinds.
        let mut resources = Vec::new();
        for rule in hook["rules"].as_array().expect("rules") {
            assert_eq!(
                rule["operations"],
                serde_json::json!(["CREATE", "UPDATE"]),
                "{name}"
            );
            for r in rule["resources"].as_array().expect("resources") {
                resources.push(r.as_str().expect("s").to_owned());
            }
        }
        resources.sort();
        assert_eq!(
            resources,
            [
                "cronjobs",
                "daemonsets",
                "deployments",
                "jobs",
                "pods",
                "pods/ephemeralcontainers",
                "replicasets",
                "statefulsets",
            ],
            "{name}"
        );
    }
    paths.sort();
    assert_eq!(
        paths,
        ["/v1/admission", "/v1/admission/deny", "/v1/admission/warn"]
    );

    // The Service reaches the Deployment's TLS port; the Deployment serves the webhook
    // over TLS.
    let deployment = find("Deployment");
    let pod = &deployment["spec"]["template"];
    // The sample NetworkPolicy selects the Deployment's Pods and lets callers reach the
    // container's port.
    let policy = find("NetworkPolicy");
    for (key, value) in policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .expect("podSelector")
    {
        assert_eq!(&pod["metadata"]["labels"][key], value, "podSelector {key}");
    }
    assert_eq!(
        policy["spec"]["ingress"][0]["ports"][0]["port"],
        pod["spec"]["containers"][0]["ports"][0]["containerPort"],
        "NetworkPolicy ingress port"
    );
    for (key, value) in service["spec"]["selector"].as_object().expect("selector") {
        assert_eq!(&pod["metadata"]["labels"][key], value, "selector {key}");
    }
    let container = &pod["spec"]["containers"][0];
    let args = container["args"].to_string();
    for arg in [
        "--admission",
        "--tls-cert=",
        "--tls-key=",
        "--api-token-file=",
    ] {
        assert!(args.contains(arg), "{arg} in {args}");
    }
    let port_name = service["spec"]["ports"][0]["targetPort"].clone();
    assert!(
        container["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .any(|p| p["name"] == port_name),
        "the Service's targetPort is a container port"
    );
    assert_eq!(
        pod["spec"]["serviceAccountName"],
        find("ServiceAccount")["metadata"]["name"]
    );
    // RBAC: `get` only, on ServiceAccounts and Secrets; bound to that ServiceAccount.
    let role = find("ClusterRole");
    for rule in role["rules"].as_array().expect("rules") {
        assert_eq!(rule["verbs"], serde_json::json!(["get"]), "{rule}");
    }
    let binding = find("ClusterRoleBinding");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(
        binding["subjects"][0]["name"],
        find("ServiceAccount")["metadata"]["name"]
    );
}

/// `(apiVersion kind)` of each document of `text`, in order.
fn kinds_of(text: &str, what: &str) -> Vec<String> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).unwrap_or_else(|e| panic!("{what}: {e}"));
    docs.iter()
        .map(|d| {
            format!(
                "{} {}",
                d["apiVersion"].as_str().unwrap_or("?"),
                d["kind"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

/// The `deploy/…` files that docs/admission.md's install walk-through feeds to one
/// `sed … | kubectl apply -f -`, in the order it names them.
fn admission_walk_through_files() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/admission.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("sed ") && l.contains("<pullcheck-namespace>"))
        .expect("the walk-through's sed line");
    let mut files = Vec::new();
    for line in &lines[start..] {
        files.extend(
            line.split_whitespace()
                .filter(|w| w.starts_with("deploy/") && w.ends_with(".yaml"))
                .map(str::to_owned),
        );
        if line.contains("kubectl apply -f -") {
            return files;
        }
    }
    panic!("no `kubectl apply -f -` after the sed line");
}

#[test]
fn the_admission_walk_through_applies_five_objects() {
    let files = admission_walk_through_files();
    assert_eq!(
        files,
        [
            "deploy/admission/rbac.yaml",
            "deploy/admission/service.yaml",
            "deploy/admission/deployment.yaml",
        ]
    );
    // What `sed … FILE…` writes: the files one after the other (each ends with a
    // newline), with the walk-through's two substitutions.
    let joined: String = files
        .iter()
        .map(|f| deploy(f.strip_prefix("deploy/").expect("deploy/")))
        .collect::<String>()
        .replace("<pullcheck-namespace>", "pullcheck")
        .replace("<image>", "registry.example.com/pullcheck:1");
    assert_eq!(
        kinds_of(&joined, "the walk-through's stream"),
        [
            "rbac.authorization.k8s.io/v1 ClusterRole",
            "rbac.authorization.k8s.io/v1 ClusterRoleBinding",
            "v1 ServiceAccount",
            "v1 Service",
            "apps/v1 Deployment",
        ]
    );
}

/// Any `deploy/**.yaml` files given together to `kubectl apply -f -` (by `cat` or `sed`)
/// are the documents of each, in order: none runs into the next one's first document.
#[test]
fn every_deploy_manifest_can_be_concatenated() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
    for dir in [root.clone(), root.join("service"), root.join("admission")] {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        names.sort();
        let mut joined = String::new();
        let mut each = Vec::new();
        for path in &names {
            let text =
                std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                text.ends_with('\n'),
                "{}: ends with a newline",
                path.display()
            );
            each.extend(kinds_of(&text, &path.display().to_string()));
            joined.push_str(&text);
        }
        assert!(each.len() >= names.len(), "{}", dir.display());
        assert_eq!(
            kinds_of(&joined, &dir.display().to_string()),
            each,
            "{}: the files concatenated",
            dir.display()
        );
    }
}
