import Foundation

/// What an app needs to talk to its Latch deployment, shipped as a JSON file the way apps ship a platform
/// config file. `latch admin client-config` prints one.
///
/// ```json
/// {"serverURL": "https://id.example.com", "clientId": "ios-app", "audience": "identity-service", "namespace": "ios-app"}
/// ```
///
/// `"dpop": false` (absent: `true`) stops the client from binding new sessions to a key (RFC 9449 DPoP, see
/// ``dpop``). Browser sign-in reads `"federatedSignInRedirectURI"` and `"federatedSignOutRedirectURI"` (the app's URL
/// scheme or claimed link, registered for the client), so that ``UserClient/federatedSignInURL(redirectURI:idpHint:prompt:loginHint:maxAge:scope:)``
/// needs no argument.
public struct LatchClientConfiguration: Codable, Sendable, Hashable {
    /// The deployment's base URL (its issuer).
    public var serverURL: URL
    /// The app's client id.
    public var clientId: String
    /// The `aud` of the assertions the app signs (the deployment's assertion audience).
    public var audience: String
    /// Keys and tokens of this client live under this namespace in the key store.
    public var namespace: String
    /// Whether sign-ins and refreshes carry a DPoP proof (RFC 9449), so that the server binds the tokens to a key
    /// this device holds (default `true`): the device sign-in key when the user has one, else a P-256 key the client
    /// makes and keeps in the key store. A session bound earlier keeps proving its key when this is `false` — a
    /// bound token is useless without its proofs.
    public var dpop: Bool
    /// Browser sign-in: where the browser comes back after signing in (registered in the client's `redirectUris`).
    public var federatedSignInRedirectURI: String?
    /// Browser sign-out: where it comes back after signing out (registered in `postLogoutRedirectUris`).
    public var federatedSignOutRedirectURI: String?

    public init(
        serverURL: URL, clientId: String = "default", audience: String = "identity-service", namespace: String? = nil, dpop: Bool = true,
        federatedSignInRedirectURI: String? = nil, federatedSignOutRedirectURI: String? = nil
    ) {
        self.serverURL = serverURL
        self.clientId = clientId
        self.audience = audience
        self.namespace = namespace ?? clientId
        self.dpop = dpop
        self.federatedSignInRedirectURI = federatedSignInRedirectURI
        self.federatedSignOutRedirectURI = federatedSignOutRedirectURI
    }

    /// Reads a configuration file; throws `UserClientError.invalidConfiguration` naming the problem.
    public static func load(from file: URL) throws(UserClientError) -> LatchClientConfiguration {
        guard let data = try? Data(contentsOf: file) else {
            throw .invalidConfiguration("cannot read \(file.path)")
        }
        let configuration: LatchClientConfiguration
        do {
            configuration = try JSONDecoder().decode(LatchClientConfiguration.self, from: data)
        } catch {
            throw .invalidConfiguration("\(file.lastPathComponent) is not a Latch client configuration: \(error)")
        }
        try configuration.validate()
        return configuration
    }

    /// Checks the values: an http(s) URL, non-empty ids, a namespace usable as a folder name.
    public func validate() throws(UserClientError) {
        guard let scheme = serverURL.scheme?.lowercased(), scheme == "https" || scheme == "http", serverURL.host != nil else {
            throw .invalidConfiguration("serverURL must be an http or https URL")
        }
        guard !clientId.isEmpty, !audience.isEmpty else { throw .invalidConfiguration("clientId and audience must not be empty") }
        guard !namespace.isEmpty, namespace.count <= 64,
            namespace.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0) }),
            namespace != ".", namespace != ".."
        else { throw .invalidConfiguration("namespace must be 1–64 letters, digits, '-', '_' or '.'") }
    }

    enum CodingKeys: String, CodingKey {
        case serverURL, clientId, audience, namespace, dpop, federatedSignInRedirectURI, federatedSignOutRedirectURI
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        serverURL = try container.decode(URL.self, forKey: .serverURL)
        clientId = try container.decodeIfPresent(String.self, forKey: .clientId) ?? "default"
        audience = try container.decodeIfPresent(String.self, forKey: .audience) ?? "identity-service"
        namespace = try container.decodeIfPresent(String.self, forKey: .namespace) ?? clientId
        dpop = try container.decodeIfPresent(Bool.self, forKey: .dpop) ?? true
        federatedSignInRedirectURI = try container.decodeIfPresent(String.self, forKey: .federatedSignInRedirectURI)
        federatedSignOutRedirectURI = try container.decodeIfPresent(String.self, forKey: .federatedSignOutRedirectURI)
    }
}
