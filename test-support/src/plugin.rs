//! The provider's gRPC service in-process, driven the way Terraform
//! drives it: a go-plugin style client certificate for AutoMTLS, msgpack
//! values, and the schemas decoded into the types Terraform derives.

use std::collections::BTreeMap;
use std::sync::Arc;

use gpufleet::framework::FrameworkProvider;
use gpufleet::protocol::codec::{decode_msgpack, encode_msgpack};
use gpufleet::protocol::handshake::Environment;
use gpufleet::protocol::listener::Network;
use gpufleet::protocol::proto::tfplugin6 as pb;
use gpufleet::protocol::proto::tfplugin6::provider_client::ProviderClient;
use gpufleet::protocol::server::PluginServer;
use gpufleet::protocol::{Type, Value};
use gpufleet::provider::Gpufleet;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

pub const PRIORITY_CLASS: &str = "gpufleet_priority_class";

/// A client certificate made the way go-plugin makes Terraform's: self-signed,
/// a CA, for `localhost`, usable for client and server auth.
pub fn go_plugin_style_certificate() -> (String, String) {
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
    ];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn pem(der: &[u8]) -> String {
    use base64::Engine;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        lines.join("\n")
    )
}

pub struct Plugin {
    pub network: Network,
    pub address: String,
    pub server_cert_der: Vec<u8>,
    pub server_cert_pem: String,
    pub client_cert: (String, String),
}

/// The plugin on TCP, where tonic's client (used by most tests) can reach it over TLS.
pub async fn start_plugin() -> Plugin {
    start_plugin_on(Network::Tcp).await
}

pub async fn start_plugin_on(network: Network) -> Plugin {
    gpufleet::protocol::tls::install_crypto_provider();
    let client_cert = go_plugin_style_certificate();
    let env = Environment {
        client_cert: Some(client_cert.0.clone()),
        min_port: 0,
        max_port: 0,
        unix_socket_dir: None,
        unix_socket_group: None,
    };
    let server = PluginServer::bind_on(&env, network).await.unwrap();
    let line = server.handshake_line().unwrap();
    let fields: Vec<&str> = line.split('|').collect();
    assert_eq!(&fields[..3], &["1", "6", network.as_str()]);
    assert_eq!(fields[4], "grpc");
    assert!(
        fields[5].len() > 50 && !fields[5].ends_with('='),
        "certificate field: {}",
        fields[5]
    );
    let server_cert_der = server.server_certificate_der().unwrap().to_vec();
    let server_cert_pem = pem(&server_cert_der);
    let address = fields[3].to_string();
    tokio::spawn(server.serve(
        Arc::new(FrameworkProvider::new(Gpufleet)),
        std::future::pending(),
    ));
    Plugin {
        network,
        address,
        server_cert_der,
        server_cert_pem,
        client_cert,
    }
}

pub async fn connect(
    plugin: &Plugin,
    with_client_cert: bool,
) -> Result<ProviderClient<Channel>, tonic::transport::Error> {
    Ok(ProviderClient::new(
        channel(plugin, with_client_cert).await?,
    ))
}

async fn channel(
    plugin: &Plugin,
    with_client_cert: bool,
) -> Result<Channel, tonic::transport::Error> {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&plugin.server_cert_pem))
        .domain_name("localhost");
    if with_client_cert {
        tls = tls.identity(Identity::from_pem(
            &plugin.client_cert.0,
            &plugin.client_cert.1,
        ));
    }
    Channel::from_shared(format!("https://{}", plugin.address))
        .unwrap()
        .tls_config(tls)?
        .connect()
        .await
}

pub fn dynamic(value: &Value, ty: &Type) -> Option<pb::DynamicValue> {
    Some(pb::DynamicValue {
        msgpack: encode_msgpack(value, ty).unwrap(),
        json: Vec::new(),
    })
}

pub fn object(ty: &Type, pairs: &[(&str, Value)]) -> Value {
    let Type::Object { attributes, .. } = ty else {
        panic!("not an object type")
    };
    let mut m: BTreeMap<String, Value> = attributes
        .keys()
        .map(|k| (k.clone(), Value::Null))
        .collect();
    for (k, v) in pairs {
        m.insert(k.to_string(), v.clone());
    }
    Value::Object(m)
}

pub fn errors(diagnostics: &[pb::Diagnostic]) -> Vec<String> {
    diagnostics
        .iter()
        .filter(|d| d.severity == pb::diagnostic::Severity::Error as i32)
        .map(|d| format!("{}: {}", d.summary, d.detail))
        .collect()
}

pub fn first_step(d: &pb::Diagnostic) -> Option<String> {
    use pb::attribute_path::step::Selector;
    match d.attribute.as_ref()?.steps.first()?.selector.as_ref()? {
        Selector::AttributeName(a) => Some(a.clone()),
        _ => None,
    }
}

/// Every attribute name of a diagnostic's path, in order.
pub fn attribute_names(d: &pb::Diagnostic) -> Vec<String> {
    use pb::attribute_path::step::Selector;
    d.attribute
        .iter()
        .flat_map(|path| &path.steps)
        .filter_map(|step| match step.selector.as_ref()? {
            Selector::AttributeName(a) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

/// Terraform's view of the provider: schemas decoded into types.
pub struct Terraform {
    pub client: ProviderClient<Channel>,
    pub provider_type: Type,
    pub class_type: Type,
    pub class_identity_type: Type,
}

/// What an apply or read leaves: state, private bytes, identity, errors.
pub struct Stored {
    pub state: Value,
    pub private: Vec<u8>,
    pub identity: Value,
    pub errors: Vec<String>,
}

/// An identity from the wire; null when none was sent.
pub fn identity_value(data: Option<&pb::ResourceIdentityData>, ty: &Type) -> Value {
    match data.and_then(|d| d.identity_data.as_ref()) {
        Some(dv) => decode_msgpack(&dv.msgpack, ty).unwrap(),
        None => Value::Null,
    }
}

pub fn identity_data(value: &Value, ty: &Type) -> Option<pb::ResourceIdentityData> {
    Some(pb::ResourceIdentityData {
        identity_data: dynamic(value, ty),
    })
}

impl Terraform {
    pub async fn new(plugin: &Plugin) -> Self {
        let mut client = connect(plugin, true)
            .await
            .expect("mTLS connection with the client certificate");
        let schema = client
            .get_provider_schema(pb::get_provider_schema::Request {})
            .await
            .unwrap()
            .into_inner();
        assert!(errors(&schema.diagnostics).is_empty());
        let provider_type = block_type(schema.provider.as_ref().unwrap());
        let class_type = block_type(&schema.resource_schemas[PRIORITY_CLASS]);
        // Terraform 1.12+ asks for identities right after the schema.
        let identities = client
            .get_resource_identity_schemas(pb::get_resource_identity_schemas::Request {})
            .await
            .unwrap()
            .into_inner();
        assert!(errors(&identities.diagnostics).is_empty());
        let class_identity_type = identity_type(&identities.identity_schemas[PRIORITY_CLASS]);
        Self {
            client,
            provider_type,
            class_type,
            class_identity_type,
        }
    }

    pub async fn configure(&mut self, kubeconfig: &str) -> Vec<String> {
        let config = object(
            &self.provider_type,
            &[("config_path", Value::string(kubeconfig))],
        );
        let r = self
            .client
            .configure_provider(pb::configure_provider::Request {
                terraform_version: "1.11.4".into(),
                config: dynamic(&config, &self.provider_type),
                client_capabilities: None,
            })
            .await
            .unwrap()
            .into_inner();
        errors(&r.diagnostics)
    }

    pub async fn plan(
        &mut self,
        prior: &Value,
        proposed: &Value,
        config: &Value,
    ) -> pb::plan_resource_change::Response {
        let ty = &self.class_type;
        self.client
            .plan_resource_change(pb::plan_resource_change::Request {
                type_name: PRIORITY_CLASS.into(),
                prior_state: dynamic(prior, ty),
                proposed_new_state: dynamic(proposed, ty),
                config: dynamic(config, ty),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
    }

    pub async fn apply(
        &mut self,
        prior: &Value,
        planned: &Value,
        config: &Value,
        private: Vec<u8>,
    ) -> Stored {
        let ty = self.class_type.clone();
        let r = self
            .client
            .apply_resource_change(pb::apply_resource_change::Request {
                type_name: PRIORITY_CLASS.into(),
                prior_state: dynamic(prior, &ty),
                planned_state: dynamic(planned, &ty),
                config: dynamic(config, &ty),
                planned_private: private,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        self.stored(r.new_state, r.private, r.new_identity, &r.diagnostics)
    }

    /// What an apply or a read answered, decoded.
    fn stored(
        &self,
        state: Option<pb::DynamicValue>,
        private: Vec<u8>,
        identity: Option<pb::ResourceIdentityData>,
        diagnostics: &[pb::Diagnostic],
    ) -> Stored {
        Stored {
            state: decode_msgpack(&state.unwrap().msgpack, &self.class_type).unwrap(),
            private,
            identity: identity_value(identity.as_ref(), &self.class_identity_type),
            errors: errors(diagnostics),
        }
    }

    /// The provider's schemas, as Terraform asks for them first.
    pub async fn provider_schema(&mut self) -> pb::get_provider_schema::Response {
        self.client
            .get_provider_schema(pb::get_provider_schema::Request {})
            .await
            .unwrap()
            .into_inner()
    }

    /// A refresh, handing back the stored identity as Terraform does.
    pub async fn read(&mut self, current: &Value, private: Vec<u8>, identity: &Value) -> Stored {
        let ty = self.class_type.clone();
        let r = self
            .client
            .read_resource(pb::read_resource::Request {
                type_name: PRIORITY_CLASS.into(),
                current_state: dynamic(current, &ty),
                private: private.clone(),
                current_identity: (!identity.is_null())
                    .then(|| identity_data(identity, &self.class_identity_type))
                    .flatten(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        self.stored(r.new_state, r.private, r.new_identity, &r.diagnostics)
    }

    /// An import by ID or (given an identity) by identity: the one
    /// resource's skeleton state, private bytes and identity.
    pub async fn import(&mut self, id: &str, identity: Option<&Value>) -> Stored {
        let r = self
            .client
            .import_resource_state(pb::import_resource_state::Request {
                type_name: PRIORITY_CLASS.into(),
                id: id.into(),
                client_capabilities: None,
                identity: identity.and_then(|i| identity_data(i, &self.class_identity_type)),
            })
            .await
            .unwrap()
            .into_inner();
        let errors = errors(&r.diagnostics);
        let [resource] = &r.imported_resources[..] else {
            panic!("one imported resource expected: {errors:?}")
        };
        Stored {
            state: decode_msgpack(&resource.state.as_ref().unwrap().msgpack, &self.class_type)
                .unwrap(),
            private: resource.private.clone(),
            identity: identity_value(resource.identity.as_ref(), &self.class_identity_type),
            errors,
        }
    }
}

/// The object type of identities of `schema`, as Terraform derives it.
pub fn identity_type(schema: &pb::ResourceIdentitySchema) -> Type {
    Type::Object {
        attributes: schema
            .identity_attributes
            .iter()
            .map(|a| {
                let ty = Type::from_json(&serde_json::from_slice(&a.r#type).unwrap()).unwrap();
                (a.name.clone(), ty)
            })
            .collect(),
        optional: Default::default(),
    }
}

pub fn block_type(schema: &pb::Schema) -> Type {
    let block = schema.block.as_ref().unwrap();
    Type::Object {
        attributes: block
            .attributes
            .iter()
            .map(|a| {
                // Terraform refuses a schema whose attribute has both.
                assert!(
                    a.r#type.is_empty() != a.nested_type.is_none(),
                    "{}: type xor nested_type",
                    a.name
                );
                let ty = if let Some(nested) = &a.nested_type {
                    nested_type(nested)
                } else {
                    Type::from_json(&serde_json::from_slice(&a.r#type).unwrap()).unwrap()
                };
                (a.name.clone(), ty)
            })
            .collect(),
        optional: Default::default(),
    }
}

fn nested_type(object: &pb::schema::Object) -> Type {
    let inner = block_type(&pb::Schema {
        version: 0,
        block: Some(pb::schema::Block {
            attributes: object.attributes.clone(),
            ..Default::default()
        }),
    });
    match pb::schema::object::NestingMode::try_from(object.nesting).unwrap() {
        pb::schema::object::NestingMode::Single => inner,
        pb::schema::object::NestingMode::List => Type::list(inner),
        pb::schema::object::NestingMode::Set => Type::set(inner),
        pb::schema::object::NestingMode::Map => Type::map(inner),
        pb::schema::object::NestingMode::Invalid => panic!("invalid nesting"),
    }
}

/// Whether the plugin answers a call over this connection.
pub async fn answers(plugin: &Plugin, with_client_cert: bool) -> bool {
    match connect(plugin, with_client_cert).await {
        Err(_) => false,
        Ok(mut client) => client
            .get_provider_schema(pb::get_provider_schema::Request {})
            .await
            .is_ok(),
    }
}
