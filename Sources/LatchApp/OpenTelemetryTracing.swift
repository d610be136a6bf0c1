import Logging
import ServiceLifecycle
import Tracing

#if OTel
import OTel
#endif

/// `tracing.enabled`: spans (requests, token grants, store units and reads, calls to hooks, upstream providers, JWKS
/// and DeviceCheck) exported over OTLP/HTTP by swift-otel to the collector at `OTEL_EXPORTER_OTLP_ENDPOINT` (default
/// `http://localhost:4318`; `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_TRACES_SAMPLER` and the other OTel variables apply).
///
/// The exporter is built only with the `OTel` package trait (`swift build -c release --traits OTel`): without it, the
/// code still creates its spans against the no-op tracer, and `tracing.enabled` is refused at start-up.
enum OpenTelemetryTracing {
    /// Bootstraps the process's tracer and returns the exporter's service, to run with the server's.
    static func bootstrap(serviceName: String, logger: Logger) throws -> any Service {
        #if OTel
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        configuration.diagnosticLogger = .custom(logger)
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        return backend.service
        #else
        throw ConfigurationError(
            key: "tracing.enabled",
            problem: "this latch was built without the OTLP exporter: build it with `swift build -c release --traits OTel`, or set tracing.enabled=false")
        #endif
    }

    /// Whether this build can export traces.
    static var available: Bool {
        #if OTel
        true
        #else
        false
        #endif
    }
}
