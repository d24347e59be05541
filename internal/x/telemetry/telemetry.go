// Package telemetry installs OpenTelemetry tracing for a toolhub process:
// an OTLP exporter (HTTP or gRPC), the W3C trace-context propagator and
// the tracer provider that hub/tracing's spans go to.
//
// It is configured by the standard OTEL_* environment variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER,
// OTEL_BSP_*, OTEL_SDK_DISABLED, …) and by the config's telemetry block;
// a variable that is set wins over the config. With neither, [Start] does
// nothing and tracing costs nothing.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Config is the `telemetry:` block of toolhub.yaml. Every field is
// optional; the matching OTEL_* variable, when set, wins.
type Config struct {
	// Endpoint is the OTLP collector: a URL ("http://collector:4318" for
	// OTLP/HTTP, whose traces go to /v1/traces; "http://collector:4317"
	// for gRPC). "" means OTEL_EXPORTER_OTLP_ENDPOINT; neither: tracing off.
	Endpoint string `yaml:"endpoint"`
	// Protocol is "http/protobuf" (the default) or "grpc";
	// OTEL_EXPORTER_OTLP_PROTOCOL wins.
	Protocol string `yaml:"protocol"`
	// Headers are sent with every export (e.g. an API key of a hosted
	// collector); OTEL_EXPORTER_OTLP_HEADERS adds to them.
	Headers map[string]string `yaml:"headers"`
	// ServiceName is the service.name of the spans; default "toolhub";
	// OTEL_SERVICE_NAME wins.
	ServiceName string `yaml:"service_name"`
	// SampleRatio is the share of new traces recorded (0..1); nil means 1.
	// A call that comes with a sampled traceparent is always recorded.
	// OTEL_TRACES_SAMPLER wins.
	SampleRatio *float64 `yaml:"sample_ratio"`
}

// Validate checks the block.
func (c Config) Validate() error {
	var errs []error
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
			errs = append(errs, fmt.Errorf("telemetry.endpoint %q: want an http:// or https:// URL such as http://127.0.0.1:4318", c.Endpoint))
		}
	}
	switch c.Protocol {
	case "", "http/protobuf", "grpc":
	default:
		errs = append(errs, fmt.Errorf("telemetry.protocol %q: want http/protobuf or grpc", c.Protocol))
	}
	if r := c.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		errs = append(errs, fmt.Errorf("telemetry.sample_ratio %v: want 0..1", *r))
	}
	return errors.Join(errs...)
}

// Options configure [Start]. LookupEnv is required.
type Options struct {
	LookupEnv func(string) (string, bool)
	Version   string       // service.version
	Logger    *slog.Logger // export errors; nil: slog.Default()
	// Enable is told when spans start (Start) and stop (Shutdown) being
	// exported; the hub passes tracing.Enable. Nil: nobody is told.
	Enable func(on bool)
}

// Tracing is the tracing [Start] installed.
type Tracing struct {
	// On reports whether spans are recorded and exported.
	On       bool
	provider *sdktrace.TracerProvider
	enable   func(on bool)
}

// Shutdown exports the spans still buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	if t.enable != nil {
		t.enable(false)
	}
	return t.provider.Shutdown(ctx)
}

// Enabled reports whether c and the environment ask for tracing.
func Enabled(c Config, env func(string) (string, bool)) bool {
	if v, _ := env("OTEL_SDK_DISABLED"); strings.EqualFold(strings.TrimSpace(v), "true") {
		return false
	}
	switch v, _ := env("OTEL_TRACES_EXPORTER"); strings.TrimSpace(v) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return set(env, "OTEL_EXPORTER_OTLP_ENDPOINT") || set(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || c.Endpoint != ""
}

func set(env func(string) (string, bool), name string) bool {
	v, ok := env(name)
	return ok && strings.TrimSpace(v) != ""
}

// Start installs tracing as c and the environment say, as the process's
// global tracer provider and propagator. When nothing asks for tracing it
// installs nothing and returns a Tracing that is off.
func Start(ctx context.Context, c Config, o Options) (*Tracing, error) {
	env := o.LookupEnv
	if !Enabled(c, env) {
		return &Tracing{}, nil
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	protocol := c.Protocol
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if v, ok := env(name); ok && strings.TrimSpace(v) != "" {
			protocol = strings.TrimSpace(v)
		}
	}
	// The exporters read the OTEL_EXPORTER_OTLP_* variables themselves;
	// the config's values apply only where no variable is set.
	useCfgEndpoint := c.Endpoint != "" && !set(env, "OTEL_EXPORTER_OTLP_ENDPOINT") && !set(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		var opts []otlptracehttp.Option
		if useCfgEndpoint {
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(c.Endpoint, "/")+"/v1/traces"))
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(c.Headers))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	case "grpc":
		var opts []otlptracegrpc.Option
		if useCfgEndpoint {
			opts = append(opts, otlptracegrpc.WithEndpointURL(c.Endpoint))
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(c.Headers))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("telemetry: OTLP protocol %q: want http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	name := c.ServiceName
	if name == "" {
		name = "toolhub"
	}
	attrs := []attribute.KeyValue{attribute.String("service.version", o.Version)}
	if !set(env, "OTEL_SERVICE_NAME") {
		attrs = append(attrs, attribute.String("service.name", name))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		res = resource.Default()
	}
	popts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if c.SampleRatio != nil && !set(env, "OTEL_TRACES_SAMPLER") {
		popts = append(popts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*c.SampleRatio))))
	}
	tp := sdktrace.NewTracerProvider(popts...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("telemetry: exporting spans failed", "err", err) }))
	if o.Enable != nil {
		o.Enable(true)
	}
	log.Info("tracing on: spans go to an OTLP collector", "protocol", orDefault(protocol, "http/protobuf"))
	return &Tracing{On: true, provider: tp, enable: o.Enable}, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
