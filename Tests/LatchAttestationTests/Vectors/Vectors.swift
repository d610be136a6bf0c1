import Foundation

/// The third-party evidence in `Tests/Vectors` (sources in its README).
enum Vectors {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors")

    static func text(_ name: String) -> String {
        (try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }
}

/// Apple's App Attest examples and a real device's attestation and assertion.
enum AppleExamples {
    static var attestation2024: String { Vectors.text("apple-app-attest-2024.b64") }
    static let keyID2024 = "bSrEhF8TIzIvWSPwvZ0i2+UOBre4ASH84rK15m6emNY="
    static var attestation2026: String { Vectors.text("apple-app-attest-2026.b64") }
    static let keyID2026 = "zgSY9YSD+7TaDXssY6WlOPVS1K3Lmk+pFhlcSWE+ZV0="
    static var deviceAttestation2021: String { Vectors.text("app-attest-device-2021-attestation.b64") }
    static let deviceKeyID2021 = "YmbJO4x5nEHUvncp9zdWuVZjNBEMgJn3cdSToAXQe3M="
    static var deviceAssertion2021: String { Vectors.text("app-attest-device-2021-assertion.b64").trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// Real Android key attestation chains (PEM, leaf first).
enum AndroidChains {
    static var akitaTEE: String { Vectors.text("android-akita-tee-ec.pem") }
    static var akitaStrongBox: String { Vectors.text("android-akita-strongbox-rsa.pem") }
    static var teguTEE: String { Vectors.text("android-tegu-tee-ec-2026-root.pem") }
    /// A real StrongBox leaf whose signature AlgorithmIdentifier is `ecdsa-with-SHA256` with an explicit NULL; its
    /// issuer was not published with it.
    static var strongBoxNullLeaf: String { Vectors.text("android-strongbox-leaf-null-params.pem") }
}
