import Foundation
import LatchClient

// Ship the configuration file `latch admin client-config --client-id ios-app` printed with the app.
let configuration = try LatchClientConfiguration.load(from: URL(fileURLWithPath: "latch-client.json"))

// On Linux or the command line, keys and tokens live in 0600 files under a folder per namespace — here beside
// the configuration, in ./latch-state (an app picks its own data folder).
// On iOS and macOS use KeychainKeyStore(namespace: configuration.namespace) instead: see docs/ios.md.
let keyStore = try FileKeyStore(root: URL(fileURLWithPath: "latch-state"), namespace: configuration.namespace)
let client = try UserClient(configuration: configuration, keyStore: keyStore)

// Watch the sign-in status (e.g. to show the sign-in screen when a session ends elsewhere).
Task {
    for await status in await client.signInStatusUpdates() {
        print("status:", status)
    }
}

do {
    if await !client.isRegistered() {
        // A test registration key downloaded by an admin (latch admin test-keys create --out test.pem), and its id.
        let keyID = ProcessInfo.processInfo.environment["LATCH_TEST_KEY_ID"] ?? "register_key"
        let provider = try TESTAuthenticationProvider(
            name: "demo", privateKeyPEM: try String(contentsOfFile: "test.pem", encoding: .utf8), keyID: keyID)
        try await client.registerWithAuthenticationProvider(provider)
    }
    try await client.signInWithKey()

    // Tokens are refreshed automatically when they expire within 60 s; concurrent callers share one refresh.
    // They are bound to this device's key (DPoP): each call to your API takes fresh headers with a proof
    // (Authorization: DPoP <token>, DPoP: <proof>); client.authorizedRequest(_:) sets them on a URLRequest.
    let headers = try await client.authorizationHeaders(method: "GET", url: URL(string: "https://api.example.com/orders")!)
    print("call your API with:", headers.keys.sorted())

    // Claims come from an ID token verified against the server's JWKS.
    print("signed in as", try await client.userClaim("username")?.stringValue ?? "?")

    try await client.signOut()
} catch let error as UserClientError {
    // Decide on the stable code; `default` keeps this compiling when a release adds codes.
    switch error.code {
    case .insufficientAuthentication: print("sign in again (needs a sign-in within \(error.maxAge ?? 0) s)")
    case .notSignedIn: print("the session ended; sign in again")
    default: print("error \(error.code):", error)
    }
} catch {
    print("error:", error)
}
