import Foundation

/// The console's words in one language: every ``ConsoleWord`` has its English text (its raw value) and a German
/// one (a `switch` without a default, so a word without German does not compile). A word's `{}` marks take the
/// values given with it, in order.
public struct ConsoleWords: Sendable {
    public let language: Language

    public init(_ language: Language) {
        self.language = language
    }

    /// `word` in this language, its `{}` marks replaced by `values` in order.
    public func callAsFunction(_ word: ConsoleWord, _ values: String...) -> String {
        let parts = (language == .german ? word.german : word.rawValue).components(separatedBy: "{}")
        var text = parts[0]
        for (index, part) in parts.dropFirst().enumerated() { text += (index < values.count ? values[index] : "") + part }
        return text
    }

    /// An English text in this language when it is a console word (the navigation's labels), else as it is.
    public func translated(_ english: String) -> String {
        ConsoleWord(rawValue: english).map { self($0) } ?? english
    }
}

/// The flash message a redirect's `done` key names.
enum ConsoleFlash: String, CaseIterable {
    case signedOutUser = "signed-out-user", revokedSession = "revoked-session", deletedUser = "deleted-user"
    case deletedAuthenticator = "deleted-authenticator", unlocked, savedApp = "saved-app", createdApp = "created-app"
    case deletedIssuer = "deleted-issuer", deletedTestKey = "deleted-test-key", savedProvider = "saved-provider"
    case deletedProvider = "deleted-provider", deletedIdP = "deleted-idp", revokedToken = "revoked-token", deletedAdmin = "deleted-admin"
    case addedIssuer = "added-issuer", addedIdP = "added-idp", addedProvider = "added-provider", savedEvidence = "saved-evidence"
    case addedLoginIssuer = "added-login-issuer", deletedLoginIssuer = "deleted-login-issuer", consumerLoggedOut = "consumer-logged-out"
    case deletedResourceServer = "deleted-resource-server", addedCertificate = "added-certificate", deletedCertificate = "deleted-certificate"
    case rotated

    var word: ConsoleWord {
        switch self {
        case .signedOutUser: .everySessionOfThe
        case .revokedSession: .theSessionWasRevoked
        case .deletedUser: .theUserWasDeleted
        case .deletedAuthenticator: .theAuthenticatorWasDeleted
        case .unlocked: .theAuthenticatorWasUnlocked
        case .savedApp: .theAppSSettings
        case .createdApp: .theAppWasCreated
        case .deletedIssuer: .theIssuerWasDeleted
        case .deletedTestKey: .theTestKeyWas
        case .savedProvider: .theProviderWasSaved
        case .deletedProvider: .theProviderWasDeleted
        case .deletedIdP: .theUpstreamIdentityProvider
        case .revokedToken: .theTokenWasRevoked
        case .deletedAdmin: .theAdminAccountWas
        case .addedIssuer: .theIssuerKeyWas
        case .addedIdP: .theUpstreamIdentityProviderWas
        case .addedProvider: .theProviderWasAdded
        case .savedEvidence: .theAppSDevice
        case .addedLoginIssuer: .theLoginIssuerWas
        case .deletedLoginIssuer: .theLoginIssuerWasDeleted
        case .consumerLoggedOut: .everySessionOfTheConsumer
        case .deletedResourceServer: .theResourceServerWas
        case .addedCertificate: .theSigningCertificateWas
        case .deletedCertificate: .theSigningCertificateWasDeleted
        case .rotated: .aNewSigningKey
        }
    }
}
