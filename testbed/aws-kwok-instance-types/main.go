// Command aws-kwok-instance-types writes the instance-types file of Karpenter's kwok
// cloud provider for EC2's GPU instance types (and the CPU families named with -cpu),
// from EC2's own DescribeInstanceTypes data as the moto package ships it, with the
// requirements, labels and allocatable resources karpenter-provider-aws computes for
// them (pkg/providers/instancetype, NewInstanceType).
//
//	aws-kwok-instance-types -moto moto-X-py3-none-any.whl -region us-east-1 -cpu m7i -o FILE
package main

import (
	"archive/zip"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	"github.com/aws/karpenter-provider-aws/pkg/operator/options"
	"github.com/aws/karpenter-provider-aws/pkg/providers/instancetype"
	"github.com/aws/karpenter-provider-aws/pkg/providers/pricing"
	corev1 "k8s.io/api/core/v1"
	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	coreoptions "sigs.k8s.io/karpenter/pkg/operator/options"
)

// The kwok provider builds these requirements of an instance type itself, from the
// file's name, architecture, operatingSystems and each offering's zone and capacity
// type (kwok/cloudprovider/helpers.go, newInstanceType), so they are not repeated in
// the offerings. Zone IDs are left out: moto's offerings name the zones only.
var builtByKwok = []string{
	corev1.LabelInstanceTypeStable, corev1.LabelArchStable, corev1.LabelOSStable,
	corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey, v1.LabelTopologyZoneID,
}

func main() {
	wheel := flag.String("moto", "", "moto's wheel (its EC2 resources are read from it)")
	region := flag.String("region", "us-east-1", "the region whose zones and on-demand prices are used")
	cpu := flag.String("cpu", "m7i", "comma-separated families without GPUs to include too")
	out := flag.String("o", "", "the instance-types file to write")
	flag.Parse()
	if *wheel == "" || *out == "" {
		fail("usage: aws-kwok-instance-types -moto WHEEL [-region R] [-cpu FAMILIES] -o FILE")
	}
	if err := run(*wheel, *region, strings.Split(*cpu, ","), *out); err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "aws-kwok-instance-types:", msg)
	os.Exit(1)
}

func run(wheel, region string, cpuFamilies []string, out string) error {
	z, err := zip.OpenReader(wheel)
	if err != nil {
		return err
	}
	defer z.Close()
	var infos map[string]ec2types.InstanceTypeInfo
	if err := readGzipJSON(&z.Reader, "moto/ec2/resources/instance_types.json.gz", &infos); err != nil {
		return err
	}
	var offered []struct{ InstanceType, Location string }
	if err := readGzipJSON(&z.Reader, "moto/ec2/resources/instance_type_offerings/availability-zone/"+region+".json.gz", &offered); err != nil {
		return err
	}
	zones := map[string][]string{}
	for _, o := range offered {
		zones[o.InstanceType] = append(zones[o.InstanceType], o.Location)
	}
	prices, ok := pricing.InitialOnDemandPricesAWS[region]
	if !ok {
		return fmt.Errorf("karpenter-provider-aws has no on-demand prices for region %s", region)
	}

	ctx := defaultOptions()
	var types []kwok.InstanceTypeOptions
	for _, name := range slices.Sorted(maps.Keys(infos)) {
		info := infos[name]
		family, _, _ := strings.Cut(name, ".")
		if info.GpuInfo == nil && !slices.Contains(cpuFamilies, family) {
			continue
		}
		price, priced := prices[info.InstanceType]
		if len(zones[name]) == 0 || !priced {
			// Karpenter's AWS provider could launch it nowhere: no zone has it, or it has no
			// price, which makes its offerings unavailable
			// (pkg/providers/instancetype/offering/base_resolver.go).
			fmt.Fprintf(os.Stderr, "aws-kwok-instance-types: %s: not offered in %s (zones %v, on-demand price known: %t)\n", name, region, zones[name], priced)
			continue
		}
		types = append(types, kwokType(ctx, info, region, zones[name], price))
	}
	data, err := json.MarshalIndent(types, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(data, '\n'), 0o644)
}

// The defaults of karpenter-provider-aws's settings (VM memory overhead, reserved ENIs),
// as its flags define them.
func defaultOptions() context.Context {
	opts := &options.Options{}
	fs := &coreoptions.FlagSet{FlagSet: flag.NewFlagSet("karpenter-provider-aws", flag.ContinueOnError)}
	opts.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		fail(err.Error())
	}
	return opts.ToContext(context.Background())
}

// kwokType is the instance type as a default EC2NodeClass (AL2023, nothing else set)
// gets it, with an offering per zone and capacity type.
func kwokType(ctx context.Context, info ec2types.InstanceTypeInfo, region string, zones []string, price float64) kwok.InstanceTypeOptions {
	zoneInfo := make([]v1.ZoneInfo, len(zones))
	for i, zone := range zones {
		zoneInfo[i] = v1.ZoneInfo{Zone: zone}
	}
	it := instancetype.NewInstanceType(ctx, info, region, zones, zoneInfo, nil, nil, nil, nil, nil, nil, nil, nil, nil, v1.AMIFamilyAL2023, nil)
	var labels []corev1.NodeSelectorRequirement
	for _, key := range slices.Sorted(maps.Keys(it.Requirements)) {
		if !slices.Contains(builtByKwok, key) {
			r := it.Requirements.Get(key).NodeSelectorRequirement()
			labels = append(labels, corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
		}
	}
	// What a node gets: capacity less kube-reserved, system-reserved and the eviction
	// threshold; resources EC2 gives this type none of are left out.
	resources := corev1.ResourceList{}
	for name, q := range it.Allocatable() {
		if !q.IsZero() {
			resources[name] = q
		}
	}
	// Sorted, so that the same data always gives the same file.
	capacityTypes := it.Requirements.Get(karpv1.CapacityTypeLabelKey).Values()
	slices.Sort(capacityTypes)
	var offerings kwok.KWOKOfferings
	for _, capacityType := range capacityTypes {
		for _, zone := range zones {
			offerings = append(offerings, kwok.KWOKOffering{
				// Before its first spot price update, the AWS provider prices spot
				// capacity at the on-demand price (pkg/providers/pricing, Reset).
				Offering: cloudprovider.Offering{Price: price, Available: true},
				Requirements: append([]corev1.NodeSelectorRequirement{
					{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{capacityType}},
					{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}},
				}, labels...),
			})
		}
	}
	return kwok.InstanceTypeOptions{
		Name:             it.Name,
		Architecture:     it.Requirements.Get(corev1.LabelArchStable).Any(),
		OperatingSystems: []corev1.OSName{corev1.Linux},
		Resources:        resources,
		Offerings:        offerings,
	}
}

func readGzipJSON(z *zip.Reader, name string, v any) error {
	f, err := z.Open(name)
	if err != nil {
		return fmt.Errorf("%s in moto's wheel: %w", name, err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	data, err := io.ReadAll(gz)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
