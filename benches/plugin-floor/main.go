// The bench's plugin floor: a provider as HashiCorp's terraform-plugin-framework
// makes one, with one resource, pluginfloor_priority_class, that has
// gpufleet_priority_class's schema and identity and only stores what it is given.
// Measured beside gpufleet (benches/workloads), it is what a plugin costs
// Terraform before it talks to any API: the process, the gRPC calls, the
// framework's decoding and plan modifiers.
package main

import (
	"context"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/numberplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func main() {
	err := providerserver.Serve(context.Background(), func() provider.Provider { return floor{} },
		providerserver.ServeOpts{Address: "registry.terraform.io/gpufleet/pluginfloor"})
	if err != nil {
		log.Fatal(err)
	}
}

type floor struct{}

func (floor) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "pluginfloor"
}

// No provider configuration: gpufleet's connects lazily, so neither does work here.
func (floor) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = providerschema.Schema{}
}

func (floor) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {}

func (floor) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{func() resource.Resource { return priorityClass{} }}
}

func (floor) DataSources(context.Context) []func() datasource.DataSource { return nil }

type priorityClass struct{}

// model is the resource's state, attribute for attribute gpufleet_priority_class's.
type model struct {
	ID               types.String `tfsdk:"id"`
	Name             types.String `tfsdk:"name"`
	Value            types.Number `tfsdk:"value"`
	PreemptionPolicy types.String `tfsdk:"preemption_policy"`
	GlobalDefault    types.Bool   `tfsdk:"global_default"`
	Description      types.String `tfsdk:"description"`
	Labels           types.Map    `tfsdk:"labels"`
	Annotations      types.Map    `tfsdk:"annotations"`
	Timeouts         types.Object `tfsdk:"timeouts"`
}

type identity struct {
	Name types.String `tfsdk:"name"`
}

func (priorityClass) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_priority_class"
}

func (priorityClass) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	timeout := schema.StringAttribute{Optional: true}
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required:      true,
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"value": schema.NumberAttribute{
				Required:      true,
				PlanModifiers: []planmodifier.Number{numberplanmodifier.RequiresReplace()},
			},
			"preemption_policy": schema.StringAttribute{
				Optional:      true,
				Computed:      true,
				Default:       stringdefault.StaticString("PreemptLowerPriority"),
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"global_default": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
			},
			"description": schema.StringAttribute{Optional: true},
			"labels":      schema.MapAttribute{Optional: true, ElementType: types.StringType},
			"annotations": schema.MapAttribute{Optional: true, ElementType: types.StringType},
			"timeouts": schema.SingleNestedAttribute{
				Optional: true,
				Attributes: map[string]schema.Attribute{
					"create": timeout, "read": timeout, "update": timeout, "delete": timeout,
				},
			},
		},
	}
}

func (priorityClass) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"name": identityschema.StringAttribute{RequiredForImport: true},
		},
	}
}

// save writes m as the new state, and its identity when the CLI supports
// identities: all a framework resource does after its API call.
func save(ctx context.Context, m *model, state *tfsdk.State, id *tfsdk.ResourceIdentity) diag.Diagnostics {
	m.ID = m.Name
	diags := state.Set(ctx, m)
	if id != nil {
		diags.Append(id.Set(ctx, identity{Name: m.Name})...)
	}
	return diags
}

func (priorityClass) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(save(ctx, &m, &resp.State, resp.Identity)...)
	}
}

// Read finds the object as it was stored: nothing else can change it.
func (priorityClass) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m model
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(save(ctx, &m, &resp.State, resp.Identity)...)
	}
}

func (priorityClass) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(save(ctx, &m, &resp.State, resp.Identity)...)
	}
}

// Delete has nothing to remove; the framework drops the state.
func (priorityClass) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
