import Foundation
import LatchJOSE
import LatchModel
import Logging

extension AdminService {
    /// Adds an upstream identity provider: settings checked, the secret sealed. Its discovery document is read at the
    /// first sign-in, not here (an upstream may be configured before it is reachable).
    public func addUpstreamIdP(_ request: AdminUpstreamIdPRequest, issuer: String) async throws -> AdminUpstreamIdP {
        guard (1...64).contains(request.id.utf8.count),
            request.id.utf8.allSatisfy({ (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") })
        else { throw LatchError.invalidInput("id must be 1–64 of a–z, 0–9, - and _") }
        guard Self.isName(request.displayName, max: 128) else { throw LatchError.invalidInput("displayName must be 1–128 printable characters") }
        guard UpstreamOpenIDClient.isAcceptableURL(request.issuer), request.issuer.utf8.count <= 512, !request.issuer.contains("?") else {
            throw LatchError.invalidInput("issuer must be an https URL (http only on loopback), without credentials or fragment")
        }
        guard Self.isName(request.clientId, max: 255) else { throw LatchError.invalidInput("clientId must be 1–255 printable characters") }
        let authentication: UpstreamIdP.ClientAuthentication
        if let text = request.clientAuthentication {
            guard let parsed = UpstreamIdP.ClientAuthentication(rawValue: text) else {
                throw LatchError.invalidInput("clientAuthentication must be client_secret_basic, client_secret_post or private_key_jwt")
            }
            authentication = parsed
        } else {
            authentication = request.clientSecret == nil ? .privateKeyJWT : .clientSecretBasic
        }
        if authentication == .privateKeyJWT {
            guard request.clientSecret == nil else { throw LatchError.invalidInput("private_key_jwt takes no clientSecret") }
        } else {
            guard let secret = request.clientSecret, (1...512).contains(secret.utf8.count) else {
                throw LatchError.invalidInput("clientSecret (1–512 bytes) is required for \(authentication.rawValue)")
            }
        }
        var scopes = request.scopes ?? ["openid", "profile", "email"]
        guard scopes.count <= 20, scopes.allSatisfy({ Self.isScopeToken($0) }) else {
            throw LatchError.invalidInput("scopes must be at most 20 scope tokens")
        }
        if !scopes.contains("openid") { scopes.insert("openid", at: 0) }
        let usernameClaim = request.usernameClaim ?? "sub"
        guard Self.isName(usernameClaim, max: 64) else { throw LatchError.invalidInput("usernameClaim must be a claim name") }
        let kept = request.keptClaims ?? []
        guard kept.count <= 32, kept.allSatisfy({ Self.isName($0, max: 64) }) else { throw LatchError.invalidInput("keptClaims must be at most 32 claim names") }
        if let reserved = kept.first(where: { TokenMinter.reservedClaims.contains($0) }) {
            throw LatchError.invalidInput("keptClaims cannot include \(reserved): Latch sets it itself")
        }
        if let domains = request.allowedEmailDomains {
            guard !domains.isEmpty, domains.count <= 100, domains.allSatisfy({ EmailDomain.normalized($0) != nil }) else {
                throw LatchError.invalidInput(
                    "allowedEmailDomains must be 1–100 domain names, internationalised ones in their xn-- (A-label) form")
            }
        }
        let algorithms = request.algorithms ?? ["RS256", "ES256"]
        guard !algorithms.isEmpty, algorithms.allSatisfy({ JWSAlgorithm(rawValue: $0) != nil }) else {
            throw LatchError.invalidInput("algorithms must be among ES256, ES384 and RS256")
        }
        guard let sealer else { throw LatchError(.serverError, "no key-encryption key is configured") }
        let sealedSecret = try request.clientSecret.map {
            try sealer.seal(Data($0.utf8), keyID: AuthorizationService.sealingContext(request.id))
        }
        let idp = UpstreamIdP(
            id: request.id,
            settings: UpstreamIdP.Settings(
                displayName: request.displayName, issuer: request.issuer, clientId: request.clientId, clientAuthentication: authentication,
                scopes: scopes, usernameClaim: usernameClaim, keptClaims: kept, allowedEmailDomains: request.allowedEmailDomains,
                useUserinfo: request.useUserinfo ?? false, algorithms: algorithms),
            sealedSecret: sealedSecret, createdAt: clock.seconds())
        do {
            let event = change(
                "upstream_idps", "create",
                "upstream \(idp.id) issuer \(idp.settings.issuer) client \(idp.settings.clientId) auth \(authentication.rawValue) secret \(sealedSecret == nil ? "none" : "set")")
            try await store.write {
                $0.insertUpstreamIdP(idp, ifTaken: EvidenceRefusal.taken)
                $0.record(event)
            }
        } catch EvidenceRefusal.taken {
            throw LatchError(.conflict, "an upstream identity provider with this id exists")
        }
        logger.info("upstream identity provider added", metadata: ["idp": "\(idp.id)", "issuer": "\(idp.settings.issuer)"])
        return Self.adminUpstreamIdP(idp, issuer: issuer)
    }

    public func upstreamIdPList(issuer: String) async throws -> AdminUpstreamIdPList {
        AdminUpstreamIdPList(upstreamIdps: try await store.upstreamIdPs().map { Self.adminUpstreamIdP($0, issuer: issuer) })
    }

    public func upstreamIdP(id: String, issuer: String) async throws -> AdminUpstreamIdP {
        guard let idp = try await store.upstreamIdP(id: id) else { throw LatchError.notFound("no such upstream identity provider") }
        return Self.adminUpstreamIdP(idp, issuer: issuer)
    }

    /// Deletes an upstream and its browsers' web sessions; the users it created stay (their app sessions too).
    public func deleteUpstreamIdP(id: String) async throws {
        do {
            let event = change("upstream_idps", "delete", "upstream \(id)")
            try await store.write {
                $0.deleteUpstreamIdP(id: id, ifMissing: EvidenceRefusal.missing)
                $0.record(event)
            }
        } catch EvidenceRefusal.missing {
            throw LatchError.notFound("no such upstream identity provider")
        }
        logger.info("upstream identity provider deleted", metadata: ["idp": "\(id)"])
    }

    static func adminUpstreamIdP(_ idp: UpstreamIdP, issuer: String) -> AdminUpstreamIdP {
        let settings = idp.settings
        return AdminUpstreamIdP(
            id: idp.id, displayName: settings.displayName, issuer: settings.issuer, clientId: settings.clientId,
            clientAuthentication: settings.clientAuthentication.rawValue, hasClientSecret: idp.sealedSecret != nil, scopes: settings.scopes,
            usernameClaim: settings.usernameClaim, keptClaims: settings.keptClaims, allowedEmailDomains: settings.allowedEmailDomains,
            useUserinfo: settings.useUserinfo, algorithms: settings.algorithms, callbackURL: AuthorizationService.callbackURL(issuer: issuer, idp: idp.id),
            signedOutURL: AuthorizationService.signedOutURL(issuer: issuer, idp: idp.id), createdAt: idp.createdAt)
    }

    /// RFC 6749 §3.3 scope-token: printable ASCII except space, `"` and `\`.
    static func isScopeToken(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 64
            && value.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }

    /// A client's browser sign-in settings after `patch`: every URI registrable, every upstream configured.
    func checkedFederation(_ patch: AdminClientPatch, stored: ClientEvidence.Federation?) async throws -> ClientEvidence.Federation {
        var federation = stored ?? ClientEvidence.Federation()
        if let uris = patch.redirectUris {
            guard uris.count <= 20, uris.allSatisfy(AuthorizationService.isRegistrableRedirectURI) else {
                throw LatchError.invalidInput(
                    "redirectUris: at most 20 absolute URIs without fragment or userinfo: https, http on 127.0.0.1/[::1], or a private-use scheme with a dot")
            }
            federation.redirectUris = uris
        }
        if let uris = patch.postLogoutRedirectUris {
            guard uris.count <= 20, uris.allSatisfy(AuthorizationService.isRegistrableRedirectURI) else {
                throw LatchError.invalidInput("postLogoutRedirectUris: at most 20 URIs, the same rules as redirectUris")
            }
            federation.postLogoutRedirectUris = uris
        }
        if let ids = patch.upstreamIdps {
            let configured = Set(try await store.upstreamIdPs().map(\.id))
            guard ids.count <= 20, Set(ids).count == ids.count else { throw LatchError.invalidInput("upstreamIdps: at most 20 distinct ids") }
            if let unknown = ids.first(where: { !configured.contains($0) }) {
                throw LatchError.invalidInput("upstreamIdps: \(unknown.prefix(64)) is not a configured upstream identity provider")
            }
            federation.upstreamIdps = ids
        }
        return federation
    }
}
