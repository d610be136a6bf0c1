// swift-tools-version:6.2
import PackageDescription

/// Every target: Swift 6 language mode, explicit `any`, imports that say what they use.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "latch",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .executable(name: "latch", targets: ["latch"]),
        .library(name: "LatchModel", targets: ["LatchModel"]),
        .library(name: "LatchJOSE", targets: ["LatchJOSE"]),
        .library(name: "LatchCore", targets: ["LatchCore"]),
        .library(name: "LatchWeb", targets: ["LatchWeb"]),
        .library(name: "LatchServer", targets: ["LatchServer"]),
        .library(name: "LatchApp", targets: ["LatchApp"]),
        .library(name: "LatchClient", targets: ["LatchClient"]),
        .library(name: "LatchHookKit", targets: ["LatchHookKit"]),
        .library(name: "LatchResourceServer", targets: ["LatchResourceServer"]),
        .library(name: "LatchResourceServerHummingbird", targets: ["LatchResourceServerHummingbird"]),
    ],
    traits: [
        .trait(name: "OTel", description: "Export traces over OTLP/HTTP with swift-otel (config tracing.enabled)."),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-atomics.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // The OTLP/HTTP span exporter, built only with the `OTel` trait (`swift build --traits OTel`): its protobuf code
        // adds minutes to a cold build that deployments without a collector should not pay.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // Wire types shared by the server and the SDK. Foundation only.
        .target(name: "LatchModel", swiftSettings: swiftSettings),
        // Compact JWS / JWK on swift-crypto, shared by the server and the SDK.
        .target(
            name: "LatchJOSE",
            dependencies: [
                "LatchModel", "LatchCBOR",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // CBOR (RFC 8949) for attestation objects and COSE keys: a strict decoder of untrusted bytes and a
        // deterministic encoder. Only LatchModel (its UTF-8 check, which runs on iOS 16).
        .target(name: "LatchCBOR", dependencies: ["LatchModel"], swiftSettings: swiftSettings),
        // QR codes (ISO/IEC 18004: byte mode, levels L–H, versions 1–40, mask selection) rendered as PNG, for
        // out-of-band enrollment. No dependencies; tested by decoding with zbarimg.
        .target(name: "LatchQR", swiftSettings: swiftSettings),
        // Device attestation evidence (App Attest, Android key attestation, Play Integrity): pure verifiers with
        // an injected time and trust anchors, certificate chains on swift-certificates, and the test authority that
        // makes evidence in the real formats for CI. No store, no HTTP.
        .target(
            name: "LatchAttestation",
            dependencies: [
                "LatchModel", "LatchCBOR", "LatchJOSE",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        // The engines: no HTTP, no SQL.
        .target(
            name: "LatchCore",
            dependencies: [
                "LatchModel", "LatchJOSE", "LatchAttestation", "LatchQR", "LatchHookKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // One call into SQLite's C API that Swift cannot make (variadic).
        .target(
            name: "CLatchSQLiteShim",
            dependencies: [.product(name: "SQLiteNIO", package: "sqlite-nio")]
        ),
        // The embedded store: primitives only.
        .target(
            name: "LatchSQLite",
            dependencies: [
                "LatchCore", "LatchModel", "LatchJOSE", "CLatchSQLiteShim",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // The scale-out store: primitives only.
        .target(
            name: "LatchPostgres",
            dependencies: [
                "LatchCore", "LatchModel", "LatchJOSE",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // The hosted sign-in pages and the admin console as HTML: templates compiled at start-up, one typed model per
        // page, and the words in English and German. No HTTP, no store: the edge serves what it renders.
        .target(
            name: "LatchWeb",
            dependencies: [
                "LatchCore", "LatchModel",
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            swiftSettings: swiftSettings
        ),
        // The HTTP edge only: controllers, contexts, middleware. No store, no configuration file.
        .target(
            name: "LatchServer",
            dependencies: [
                "LatchModel", "LatchJOSE", "LatchCore", "LatchWeb",
                .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // HTTP1Channel and its connection-state handler, which the well-known fast path sits behind.
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The composition root: configuration, the store it names, key files, the engines, the services.
        .target(
            name: "LatchApp",
            dependencies: [
                "LatchModel", "LatchJOSE", "LatchCore", "LatchSQLite", "LatchPostgres", "LatchServer", "LatchWeb", "LatchAttestation",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // SHA-256 of backup files; the derived keys (SymmetricKey).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTel"])),
            ],
            swiftSettings: swiftSettings
        ),
        // The Swift SDK apps use: Foundation, swift-crypto (scrypt from CryptoExtras), LatchJOSE, LatchCBOR and the wire model only.
        .target(
            name: "LatchClient",
            dependencies: [
                "LatchModel", "LatchJOSE", "LatchCBOR",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The hook side of custom registration: the Latch-Signature check, a replay guard and the wire types.
        // Foundation, swift-crypto and LatchModel (for JSONValue) only.
        .target(
            name: "LatchHookKit",
            dependencies: ["LatchModel", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // For backends: verifies Latch's access tokens (JWKS cache, RFC 9068 checks, DPoP-bound tokens, introspection,
        // step-up) without Latch's server or stores.
        .target(
            name: "LatchResourceServer",
            dependencies: [
                "LatchModel", "LatchJOSE",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // LatchResourceServer as Hummingbird 2 middleware.
        .target(
            name: "LatchResourceServerHummingbird",
            dependencies: [
                "LatchResourceServer", "LatchJOSE",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test helpers: the in-memory store and the store conformance suite, fixed clock, keys for tests, token minting.
        .target(
            name: "LatchTesting",
            dependencies: [
                "LatchModel", "LatchJOSE", "LatchCore", "LatchCBOR", "LatchAttestation",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "latch",
            dependencies: [
                "LatchModel", "LatchJOSE", "LatchCore", "LatchServer", "LatchApp", "LatchSQLite", "LatchClient", "LatchAttestation", "LatchQR", "LatchHookKit",
                "LatchResourceServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // `latch device federated-sign-in`'s loopback listener.
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The README's "Use it from your app" code, compiled so it cannot drift.
        .executableTarget(
            name: "AppExample",
            dependencies: ["LatchClient"],
            path: "Examples/AppExample",
            swiftSettings: swiftSettings
        ),
        // Custom-registration hooks that run (Examples/README-hooks.md): a one-step invitation code and a two-step SMS code.
        .executableTarget(
            name: "InvitationHook",
            dependencies: [
                "LatchHookKit", "LatchModel",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/InvitationHook",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "SMSHook",
            dependencies: [
                "LatchHookKit", "LatchModel",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/SMSHook",
            swiftSettings: swiftSettings
        ),
        // A backend whose routes need a Latch access token (Examples/README-resource-server.md).
        .executableTarget(
            name: "ResourceServerExample",
            dependencies: [
                "LatchResourceServer", "LatchResourceServerHummingbird",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/ResourceServerExample",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchModelTests",
            dependencies: ["LatchModel", "LatchTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchCBORTests",
            dependencies: ["LatchCBOR"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchQRTests",
            dependencies: ["LatchQR", "LatchTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchJOSETests",
            dependencies: ["LatchJOSE", "LatchCBOR", "LatchTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchAttestationTests",
            dependencies: [
                "LatchAttestation", "LatchCBOR", "LatchModel", "LatchJOSE", "LatchTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchCoreTests",
            dependencies: ["LatchCore", "LatchModel", "LatchJOSE", "LatchTesting", "LatchHookKit", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchWebTests",
            dependencies: ["LatchWeb", "LatchCore", "LatchModel"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchAppTests",
            dependencies: [
                "LatchApp", "LatchCore", "LatchTesting", "LatchModel",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchSQLiteTests",
            dependencies: ["LatchSQLite", "LatchTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchPostgresTests",
            dependencies: [
                "LatchPostgres", "LatchTesting", "LatchCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchServerTests",
            dependencies: [
                "LatchServer", "LatchWeb", "LatchApp", "LatchTesting", "LatchSQLite", "LatchPostgres", "LatchAttestation", "LatchCBOR",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                // The well-known fast path's tests drive a channel handler without sockets.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchClientTests",
            dependencies: [
                "LatchClient", "LatchServer", "LatchApp", "LatchSQLite", "LatchTesting",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchHookKitTests",
            dependencies: ["LatchHookKit", "LatchModel", "LatchTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchResourceServerTests",
            dependencies: [
                "LatchResourceServer", "LatchResourceServerHummingbird", "LatchJOSE", "LatchModel", "LatchTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "LatchModel", "LatchJOSE", "LatchTesting", "LatchServer", "LatchAttestation",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
