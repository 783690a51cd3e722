//! tfplugin6.Provider, the gRPC service Terraform calls, on top of a
//! [`Provider`]: each request's values decoded with the schema of the type
//! it names, the answer encoded in msgpack.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::diagnostics::{Diagnostic, Diagnostics};
use super::proto::tfplugin6 as pb;
use super::provider::{
    ApplyRequest, ImportTarget, ListRequest, PlanRequest, Provider, ReadRequest,
};
use super::server::BoxStream;
use super::types::Type;

mod wire;

pub use wire::decode;
use wire::{encode, encode_identity, in_list_block, unknown_type};

/// tfplugin6.Provider: decodes values with the schema of the type named in
/// the request, calls the provider, encodes the answer in msgpack.
pub(super) struct ProviderService {
    provider: Arc<dyn Provider>,
    provider_type: Type,
    resource_types: HashMap<String, Type>,
    identity_types: HashMap<String, Type>,
    list_types: HashMap<String, Type>,
    data_source_types: HashMap<String, Type>,
    /// Cancelled by StopProvider; replaced so later calls run normally.
    stop: Mutex<CancellationToken>,
}

impl ProviderService {
    pub(super) fn new(provider: Arc<dyn Provider>) -> Self {
        let schemas = provider.schemas();
        let types = |list: &[(String, crate::schema::Schema)]| {
            list.iter()
                .map(|(n, s)| (n.clone(), s.value_type()))
                .collect()
        };
        Self {
            provider_type: schemas.provider.value_type(),
            resource_types: types(&schemas.resources),
            identity_types: schemas
                .identities
                .iter()
                .map(|(n, s)| (n.clone(), s.value_type()))
                .collect(),
            data_source_types: types(&schemas.data_sources),
            list_types: types(&schemas.list_resources),
            provider: provider.clone(),
            stop: Mutex::new(CancellationToken::new()),
        }
    }

    fn resource_type(&self, name: &str) -> Result<&Type, Diagnostics> {
        self.resource_types
            .get(name)
            .ok_or_else(|| unknown_type("resource", name))
    }

    fn identity_type(&self, name: &str) -> Option<&Type> {
        self.identity_types.get(name)
    }

    fn stop_token(&self) -> CancellationToken {
        self.stop.lock().expect("stop token lock").clone()
    }

    /// Runs `work` with the current stop signal: StopProvider makes it stop
    /// waiting and retrying, and it still answers with what it did (an
    /// apply's writes must reach Terraform's state, so it is never dropped).
    async fn stoppable<F: Future>(&self, work: F) -> F::Output {
        crate::stop::scope(self.stop_token(), work).await
    }
}

#[tonic::async_trait]
impl pb::provider_server::Provider for ProviderService {
    async fn get_metadata(
        &self,
        _: Request<pb::get_metadata::Request>,
    ) -> Result<Response<pb::get_metadata::Response>, Status> {
        let schemas = self.provider.schemas();
        Ok(Response::new(pb::get_metadata::Response {
            server_capabilities: Some(server_capabilities()),
            diagnostics: Vec::new(),
            data_sources: schemas
                .data_sources
                .iter()
                .map(|(n, _)| pb::get_metadata::DataSourceMetadata {
                    type_name: n.clone(),
                })
                .collect(),
            resources: schemas
                .resources
                .iter()
                .map(|(n, _)| pb::get_metadata::ResourceMetadata {
                    type_name: n.clone(),
                })
                .collect(),
            functions: Vec::new(),
            list_resources: schemas
                .list_resources
                .iter()
                .map(|(n, _)| pb::get_metadata::ListResourceMetadata {
                    type_name: n.clone(),
                })
                .collect(),
        }))
    }

    async fn get_provider_schema(
        &self,
        _: Request<pb::get_provider_schema::Request>,
    ) -> Result<Response<pb::get_provider_schema::Response>, Status> {
        let schemas = self.provider.schemas();
        let map = |list: &[(String, crate::schema::Schema)]| {
            list.iter()
                .map(|(n, s)| (n.clone(), s.to_proto()))
                .collect()
        };
        Ok(Response::new(pb::get_provider_schema::Response {
            provider: Some(schemas.provider.to_proto()),
            resource_schemas: map(&schemas.resources),
            data_source_schemas: map(&schemas.data_sources),
            diagnostics: Vec::new(),
            provider_meta: None,
            server_capabilities: Some(server_capabilities()),
            functions: HashMap::new(),
            list_resource_schemas: map(&schemas.list_resources),
        }))
    }

    async fn validate_provider_config(
        &self,
        request: Request<pb::validate_provider_config::Request>,
    ) -> Result<Response<pb::validate_provider_config::Response>, Status> {
        let req = request.into_inner();
        let diagnostics = match decode(
            req.config.as_ref(),
            &self.provider_type,
            "provider configuration",
        ) {
            Ok(config) => self.provider.validate_provider_config(config).await,
            Err(d) => d,
        };
        Ok(Response::new(pb::validate_provider_config::Response {
            diagnostics: diagnostics.to_proto(),
        }))
    }

    async fn validate_resource_config(
        &self,
        request: Request<pb::validate_resource_config::Request>,
    ) -> Result<Response<pb::validate_resource_config::Response>, Status> {
        let req = request.into_inner();
        let diagnostics = match self
            .resource_type(&req.type_name)
            .and_then(|ty| decode(req.config.as_ref(), ty, "configuration"))
        {
            Ok(config) => {
                self.provider
                    .validate_resource_config(&req.type_name, config)
                    .await
            }
            Err(d) => d,
        };
        Ok(Response::new(pb::validate_resource_config::Response {
            diagnostics: diagnostics.to_proto(),
        }))
    }

    async fn validate_data_resource_config(
        &self,
        request: Request<pb::validate_data_resource_config::Request>,
    ) -> Result<Response<pb::validate_data_resource_config::Response>, Status> {
        let req = request.into_inner();
        let diagnostics = match self
            .data_source_types
            .get(&req.type_name)
            .ok_or_else(|| unknown_type("data source", &req.type_name))
            .and_then(|ty| decode(req.config.as_ref(), ty, "configuration"))
        {
            Ok(config) => {
                self.provider
                    .validate_data_source_config(&req.type_name, config)
                    .await
            }
            Err(d) => d,
        };
        Ok(Response::new(pb::validate_data_resource_config::Response {
            diagnostics: diagnostics.to_proto(),
        }))
    }

    async fn upgrade_resource_state(
        &self,
        request: Request<pb::upgrade_resource_state::Request>,
    ) -> Result<Response<pb::upgrade_resource_state::Response>, Status> {
        let req = request.into_inner();
        let mut diagnostics = Diagnostics::default();
        let raw = req.raw_state.unwrap_or_default();
        let upgraded = match self.resource_type(&req.type_name) {
            Err(d) => {
                diagnostics.extend(d);
                None
            }
            Ok(_) if raw.json.is_empty() && !raw.flatmap.is_empty() => {
                diagnostics.error(
                    "Unsupported legacy state",
                    "This state was written in the pre-0.12 flatmap format, which gpufleet never wrote.",
                );
                None
            }
            Ok(ty) => {
                match self
                    .provider
                    .upgrade_resource_state(&req.type_name, req.version, &raw.json)
                {
                    Ok(value) => encode(&value, ty, &mut diagnostics),
                    Err(d) => {
                        diagnostics.extend(d);
                        None
                    }
                }
            }
        };
        Ok(Response::new(pb::upgrade_resource_state::Response {
            upgraded_state: upgraded,
            diagnostics: diagnostics.to_proto(),
        }))
    }

    async fn get_resource_identity_schemas(
        &self,
        _: Request<pb::get_resource_identity_schemas::Request>,
    ) -> Result<Response<pb::get_resource_identity_schemas::Response>, Status> {
        Ok(Response::new(pb::get_resource_identity_schemas::Response {
            identity_schemas: self
                .provider
                .schemas()
                .identities
                .iter()
                .map(|(n, s)| (n.clone(), s.to_proto()))
                .collect(),
            diagnostics: Vec::new(),
        }))
    }

    async fn upgrade_resource_identity(
        &self,
        request: Request<pb::upgrade_resource_identity::Request>,
    ) -> Result<Response<pb::upgrade_resource_identity::Response>, Status> {
        let req = request.into_inner();
        let mut diagnostics = Diagnostics::default();
        let raw = req.raw_identity.unwrap_or_default();
        let upgraded = match self.identity_type(&req.type_name) {
            None => {
                diagnostics.extend(unknown_type("resource identity", &req.type_name));
                None
            }
            Some(ty) => match self.provider.upgrade_resource_identity(
                &req.type_name,
                req.version,
                &raw.json,
            ) {
                Ok(value) => encode_identity(&value, Some(ty), &mut diagnostics),
                Err(d) => {
                    diagnostics.extend(d);
                    None
                }
            },
        };
        Ok(Response::new(pb::upgrade_resource_identity::Response {
            upgraded_identity: upgraded,
            diagnostics: diagnostics.to_proto(),
        }))
    }

    async fn configure_provider(
        &self,
        request: Request<pb::configure_provider::Request>,
    ) -> Result<Response<pb::configure_provider::Response>, Status> {
        let req = request.into_inner();
        let diagnostics = match decode(
            req.config.as_ref(),
            &self.provider_type,
            "provider configuration",
        ) {
            Ok(config) => {
                self.provider
                    .configure(config, &req.terraform_version)
                    .await
            }
            Err(d) => d,
        };
        Ok(Response::new(pb::configure_provider::Response {
            diagnostics: diagnostics.to_proto(),
        }))
    }

    async fn read_resource(
        &self,
        request: Request<pb::read_resource::Request>,
    ) -> Result<Response<pb::read_resource::Response>, Status> {
        let req = request.into_inner();
        let mut diagnostics = Diagnostics::default();
        let ty = match self.resource_type(&req.type_name) {
            Ok(ty) => ty,
            Err(d) => return Ok(Response::new(read_failed(d))),
        };
        let current_state = match decode(req.current_state.as_ref(), ty, "state") {
            Ok(v) => v,
            Err(d) => return Ok(Response::new(read_failed(d))),
        };
        let result = self
            .stoppable(self.provider.read_resource(ReadRequest {
                type_name: req.type_name.clone(),
                current_state,
                private: req.private.clone(),
            }))
            .await;
        diagnostics.extend(result.diagnostics);
        let new_state = encode(&result.state, ty, &mut diagnostics);
        let new_identity = encode_identity(
            &result.identity,
            self.identity_type(&req.type_name),
            &mut diagnostics,
        );
        Ok(Response::new(pb::read_resource::Response {
            new_state,
            diagnostics: diagnostics.to_proto(),
            private: result.private,
            deferred: None,
            new_identity,
        }))
    }

    async fn plan_resource_change(
        &self,
        request: Request<pb::plan_resource_change::Request>,
    ) -> Result<Response<pb::plan_resource_change::Response>, Status> {
        let req = request.into_inner();
        let decoded = self.resource_type(&req.type_name).and_then(|ty| {
            Ok((
                ty,
                decode(req.prior_state.as_ref(), ty, "prior state")?,
                decode(req.proposed_new_state.as_ref(), ty, "proposed state")?,
                decode(req.config.as_ref(), ty, "configuration")?,
            ))
        });
        let (ty, prior_state, proposed_new_state, config) = match decoded {
            Ok(v) => v,
            Err(d) => {
                return Ok(Response::new(pb::plan_resource_change::Response {
                    diagnostics: d.to_proto(),
                    ..Default::default()
                }));
            }
        };
        let plan = self
            .stoppable(self.provider.plan_resource_change(PlanRequest {
                type_name: req.type_name.clone(),
                prior_state,
                proposed_new_state,
                config,
                prior_private: req.prior_private,
            }))
            .await;
        let mut diagnostics = plan.diagnostics;
        let (planned_state, planned_identity) = if diagnostics.has_errors() {
            (None, None)
        } else {
            (
                encode(&plan.planned_state, ty, &mut diagnostics),
                encode_identity(
                    &plan.planned_identity,
                    self.identity_type(&req.type_name),
                    &mut diagnostics,
                ),
            )
        };
        Ok(Response::new(pb::plan_resource_change::Response {
            planned_state,
            requires_replace: plan.requires_replace.iter().map(|p| p.to_proto()).collect(),
            planned_private: plan.planned_private,
            diagnostics: diagnostics.to_proto(),
            deferred: None,
            planned_identity,
        }))
    }

    async fn apply_resource_change(
        &self,
        request: Request<pb::apply_resource_change::Request>,
    ) -> Result<Response<pb::apply_resource_change::Response>, Status> {
        let req = request.into_inner();
        let decoded = self.resource_type(&req.type_name).and_then(|ty| {
            Ok((
                ty,
                decode(req.prior_state.as_ref(), ty, "prior state")?,
                decode(req.planned_state.as_ref(), ty, "planned state")?,
                decode(req.config.as_ref(), ty, "configuration")?,
            ))
        });
        let (ty, prior_state, planned_state, config) = match decoded {
            Ok(v) => v,
            Err(d) => {
                return Ok(Response::new(pb::apply_resource_change::Response {
                    diagnostics: d.to_proto(),
                    ..Default::default()
                }));
            }
        };
        let result = self
            .stoppable(self.provider.apply_resource_change(ApplyRequest {
                type_name: req.type_name.clone(),
                prior_state,
                planned_state,
                config,
                planned_private: req.planned_private.clone(),
            }))
            .await;
        let mut diagnostics = result.diagnostics;
        let new_state = encode(&result.state, ty, &mut diagnostics);
        let new_identity = encode_identity(
            &result.identity,
            self.identity_type(&req.type_name),
            &mut diagnostics,
        );
        Ok(Response::new(pb::apply_resource_change::Response {
            new_state,
            private: result.private,
            diagnostics: diagnostics.to_proto(),
            new_identity,
        }))
    }

    async fn import_resource_state(
        &self,
        request: Request<pb::import_resource_state::Request>,
    ) -> Result<Response<pb::import_resource_state::Response>, Status> {
        let req = request.into_inner();
        let ty = match self.resource_type(&req.type_name) {
            Ok(ty) => ty,
            Err(d) => {
                return Ok(Response::new(pb::import_resource_state::Response {
                    diagnostics: d.to_proto(),
                    ..Default::default()
                }));
            }
        };
        let identity_type = self.identity_type(&req.type_name);
        // Terraform sends an identity instead of an ID for `import { identity = ... }`.
        let target = match (req.identity.and_then(|i| i.identity_data), identity_type) {
            (Some(data), Some(ty)) => match decode(Some(&data), ty, "import identity") {
                Ok(identity) => ImportTarget::Identity(identity),
                Err(d) => {
                    return Ok(Response::new(pb::import_resource_state::Response {
                        diagnostics: d.to_proto(),
                        ..Default::default()
                    }));
                }
            },
            _ => ImportTarget::Id(req.id),
        };
        let (imported, mut diagnostics) = self
            .stoppable(self.provider.import_resource_state(&req.type_name, target))
            .await;
        let imported_resources = imported
            .into_iter()
            .filter_map(|r| {
                Some(pb::import_resource_state::ImportedResource {
                    type_name: req.type_name.clone(),
                    state: Some(encode(&r.state, ty, &mut diagnostics)?),
                    private: r.private,
                    identity: encode_identity(&r.identity, identity_type, &mut diagnostics),
                })
            })
            .collect();
        Ok(Response::new(pb::import_resource_state::Response {
            imported_resources,
            diagnostics: diagnostics.to_proto(),
            deferred: None,
        }))
    }

    async fn move_resource_state(
        &self,
        request: Request<pb::move_resource_state::Request>,
    ) -> Result<Response<pb::move_resource_state::Response>, Status> {
        let req = request.into_inner();
        let d = Diagnostic::error(
            "Cannot move resource state",
            format!(
                "gpufleet cannot move {} ({}) to {}: no resource of gpufleet supports moves from another type.",
                req.source_type_name, req.source_provider_address, req.target_type_name
            ),
        );
        Ok(Response::new(pb::move_resource_state::Response {
            diagnostics: vec![d.to_proto()],
            ..Default::default()
        }))
    }

    async fn read_data_source(
        &self,
        request: Request<pb::read_data_source::Request>,
    ) -> Result<Response<pb::read_data_source::Response>, Status> {
        let req = request.into_inner();
        let decoded = self
            .data_source_types
            .get(&req.type_name)
            .ok_or_else(|| unknown_type("data source", &req.type_name))
            .and_then(|ty| Ok((ty, decode(req.config.as_ref(), ty, "configuration")?)));
        let (ty, config) = match decoded {
            Ok(v) => v,
            Err(d) => {
                return Ok(Response::new(pb::read_data_source::Response {
                    diagnostics: d.to_proto(),
                    ..Default::default()
                }));
            }
        };
        let (state, mut diagnostics) = self
            .stoppable(self.provider.read_data_source(&req.type_name, config))
            .await;
        let state = if diagnostics.has_errors() {
            None
        } else {
            encode(&state, ty, &mut diagnostics)
        };
        Ok(Response::new(pb::read_data_source::Response {
            state,
            diagnostics: diagnostics.to_proto(),
            deferred: None,
        }))
    }

    async fn validate_list_resource_config(
        &self,
        request: Request<pb::validate_list_resource_config::Request>,
    ) -> Result<Response<pb::validate_list_resource_config::Response>, Status> {
        let req = request.into_inner();
        let diagnostics = match self
            .list_types
            .get(&req.type_name)
            .ok_or_else(|| unknown_type("list resource", &req.type_name))
            .and_then(|ty| decode(req.config.as_ref(), ty, "list configuration"))
        {
            Ok(config) => {
                self.provider
                    .validate_list_resource_config(&req.type_name, config)
                    .await
            }
            Err(d) => d,
        };
        Ok(Response::new(pb::validate_list_resource_config::Response {
            diagnostics: in_list_block(&diagnostics),
        }))
    }

    type ListResourceStream = BoxStream<pb::list_resource::Event>;

    /// One event per object, at most `limit` (Terraform stops reading there),
    /// or one event with the diagnostics when listing failed.
    async fn list_resource(
        &self,
        request: Request<pb::list_resource::Request>,
    ) -> Result<Response<Self::ListResourceStream>, Status> {
        let req = request.into_inner();
        let decoded = self
            .list_types
            .get(&req.type_name)
            .ok_or_else(|| unknown_type("list resource", &req.type_name))
            .and_then(|ty| decode(req.config.as_ref(), ty, "list configuration"))
            .and_then(|config| Ok((config, self.resource_type(&req.type_name)?)));
        let failed = |d: Diagnostics| -> Result<Response<Self::ListResourceStream>, Status> {
            let event = pb::list_resource::Event {
                diagnostic: in_list_block(&d),
                ..Default::default()
            };
            Ok(Response::new(Box::pin(futures::stream::iter([Ok(event)]))))
        };
        let (config, ty) = match decoded {
            Ok(v) => v,
            Err(d) => return failed(d),
        };
        let (listed, diagnostics) = self
            .stoppable(self.provider.list_resource(ListRequest {
                type_name: req.type_name.clone(),
                config,
            }))
            .await;
        if diagnostics.has_errors() {
            return failed(diagnostics);
        }
        let identity_type = self.identity_type(&req.type_name);
        let limit = usize::try_from(req.limit).unwrap_or(0);
        let mut events: Vec<Result<pb::list_resource::Event, Status>> = listed
            .into_iter()
            .take(if limit > 0 { limit } else { usize::MAX })
            .map(|found| {
                let mut d = Diagnostics::default();
                let identity = encode_identity(&found.identity, identity_type, &mut d);
                let resource_object = req
                    .include_resource_object
                    .then(|| encode(&found.state, ty, &mut d))
                    .flatten();
                Ok(pb::list_resource::Event {
                    identity,
                    display_name: found.display_name,
                    resource_object,
                    diagnostic: d.to_proto(),
                })
            })
            .collect();
        // Warnings first, in an event of their own, which Terraform shows
        // and skips (hashicorp/terraform, internal/plugin6/grpc_provider.go).
        if !diagnostics.0.is_empty() {
            events.insert(
                0,
                Ok(pb::list_resource::Event {
                    diagnostic: in_list_block(&diagnostics),
                    ..Default::default()
                }),
            );
        }
        Ok(Response::new(Box::pin(futures::stream::iter(events))))
    }

    async fn get_functions(
        &self,
        _: Request<pb::get_functions::Request>,
    ) -> Result<Response<pb::get_functions::Response>, Status> {
        Ok(Response::new(pb::get_functions::Response::default()))
    }

    async fn call_function(
        &self,
        request: Request<pb::call_function::Request>,
    ) -> Result<Response<pb::call_function::Response>, Status> {
        Ok(Response::new(pb::call_function::Response {
            result: None,
            error: Some(pb::FunctionError {
                text: format!(
                    "gpufleet has no function named {:?}",
                    request.into_inner().name
                ),
                function_argument: None,
            }),
        }))
    }

    async fn stop_provider(
        &self,
        _: Request<pb::stop_provider::Request>,
    ) -> Result<Response<pb::stop_provider::Response>, Status> {
        tracing::info!("StopProvider: operations in flight stop waiting and retrying");
        let mut token = self.stop.lock().expect("stop token lock");
        token.cancel();
        *token = CancellationToken::new();
        Ok(Response::new(pb::stop_provider::Response::default()))
    }
}

fn read_failed(diagnostics: Diagnostics) -> pb::read_resource::Response {
    pb::read_resource::Response {
        diagnostics: diagnostics.to_proto(),
        ..Default::default()
    }
}

fn server_capabilities() -> pb::ServerCapabilities {
    pb::ServerCapabilities {
        plan_destroy: false,
        get_provider_schema_optional: false,
        move_resource_state: false,
    }
}
