package telemetry

import (
	"context"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		env  map[string]string
		want bool
	}{
		{"nothing configured", Config{}, nil, false},
		{"empty variable", Config{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, false},
		{"endpoint variable", Config{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"traces endpoint variable", Config{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"config endpoint", Config{Endpoint: "http://127.0.0.1:4318"}, nil, true},
		{"sdk disabled", Config{Endpoint: "http://127.0.0.1:4318"}, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{"exporter none", Config{Endpoint: "http://127.0.0.1:4318"}, map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		if got := Enabled(tc.cfg, env(tc.env)); got != tc.want {
			t.Errorf("%s: Enabled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStartOffInstallsNothing(t *testing.T) {
	tr, err := Start(context.Background(), Config{}, Options{LookupEnv: env(nil)})
	if err != nil || tr.On {
		t.Fatalf("Start with nothing configured: %+v, %v; want off", tr, err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestValidate(t *testing.T) {
	half, two := 0.5, 2.0
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{Endpoint: "http://collector:4318", Protocol: "grpc", SampleRatio: &half}, true},
		{Config{Endpoint: "collector:4318"}, false},
		{Config{Protocol: "thrift"}, false},
		{Config{SampleRatio: &two}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", tc.cfg, err, tc.ok)
		}
	}
}
