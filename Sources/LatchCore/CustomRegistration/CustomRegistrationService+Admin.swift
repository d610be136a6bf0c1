import Crypto
import Foundation
import LatchHookKit
import LatchJOSE
import LatchModel
import Logging

/// The admin API: custom providers and their transactions.
extension CustomRegistrationService {
    // MARK: Admin

    static func sealingContext(_ providerID: String) -> String { "custom-provider:\(providerID)" }

    /// 1–64 of `A–Z a–z 0–9 . _ -`.
    static func isProviderID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }
    }

    /// `POST /admin/v1/custom-providers`.
    public func createProvider(_ request: AdminCustomProviderRequest) async throws -> AdminCustomProvider {
        guard Self.isProviderID(request.id) else { throw LatchError.invalidInput("id must be 1–64 characters of A–Z a–z 0–9 . _ -") }
        let now = clock.seconds()
        var provider = CustomProvider(
            id: request.id, name: "", flow: .oneStep, hookURL: "", sealedSecret: Data(), timeout: 5, retries: 2, transactionLifetime: 600,
            allowedClaims: [], enabled: true, createdAt: now, updatedAt: now)
        try apply(
            AdminCustomProviderPatch(
                name: request.name, flow: request.flow, hookURL: request.hookURL, hookSecret: request.hookSecret, timeout: request.timeout,
                retries: request.retries, transactionLifetime: request.transactionLifetime, allowedClaims: request.allowedClaims,
                enabled: request.enabled), to: &provider)
        let created = provider
        let event = change("custom_providers", "create", "provider \(created.id): " + Self.summary(created))
        guard
            try await store.succeeds({ transaction, refusal in
                transaction.insertCustomProvider(created, ifTaken: refusal)
                transaction.record(event)
            })
        else {
            throw LatchError(.conflict, "a custom identity provider with this id exists")
        }
        logger.info("custom provider created", metadata: ["provider": "\(created.id)"])
        return Self.view(created)
    }

    /// A provider's settings as an audit record shows them (never its hook secret).
    static func summary(_ provider: CustomProvider) -> String {
        "name \"\(provider.name)\" flow \(provider.flow.rawValue) hook \(provider.hookURL) timeout \(provider.timeout) retries \(provider.retries) "
            + "lifetime \(provider.transactionLifetime) claims [\(provider.allowedClaims.joined(separator: " "))] enabled \(provider.enabled)"
    }

    /// `GET /admin/v1/custom-providers`.
    public func providers() async throws -> AdminCustomProviderList {
        AdminCustomProviderList(customProviders: try await store.customProviders().map(Self.view))
    }

    /// `GET /admin/v1/custom-providers/{id}`.
    public func provider(id: String) async throws -> AdminCustomProvider {
        guard let provider = try await store.customProvider(id: id) else { throw LatchError.notFound("no custom identity provider has this id") }
        return Self.view(provider)
    }

    /// `PATCH /admin/v1/custom-providers/{id}`.
    public func updateProvider(id: String, _ patch: AdminCustomProviderPatch) async throws -> AdminCustomProvider {
        guard var provider = try await store.customProvider(id: id) else { throw LatchError.notFound("no custom identity provider has this id") }
        let before = Self.summary(provider)
        let secretBefore = provider.sealedSecret
        try apply(patch, to: &provider)
        provider.updatedAt = clock.seconds()
        let updated = provider
        let event = change(
            "custom_providers", "update",
            "provider \(id): \(before) → \(Self.summary(updated))\(secretBefore == updated.sealedSecret ? "" : "; hook secret replaced")")
        guard
            try await store.succeeds({ transaction, refusal in
                transaction.updateCustomProvider(updated, ifMissing: refusal)
                transaction.record(event)
            })
        else {
            throw LatchError.notFound("no custom identity provider has this id")
        }
        logger.info("custom provider updated", metadata: ["provider": "\(id)"])
        return Self.view(updated)
    }

    /// `DELETE /admin/v1/custom-providers/{id}`: with its transactions.
    public func deleteProvider(id: String) async throws {
        guard try await store.customProvider(id: id) != nil else { throw LatchError.notFound("no custom identity provider has this id") }
        let event = change("custom_providers", "delete", "provider \(id)")
        let deleted = try await store.write { transaction in
            let deleted = transaction.deleteCustomProvider(id: id)
            transaction.record(event)
            return deleted
        }
        guard deleted.value == 1 else {
            throw LatchError.notFound("no custom identity provider has this id")
        }
        logger.info("custom provider deleted", metadata: ["provider": "\(id)"])
    }

    /// `GET /admin/v1/custom-providers/{id}/transactions`: the newest transactions (in `state`, when given) and the counts.
    public func transactions(providerID: String, state: String?, limit: Int?) async throws -> AdminCustomTransactions {
        guard try await store.customProvider(id: providerID) != nil else { throw LatchError.notFound("no custom identity provider has this id") }
        let filter = try state.map { name throws(LatchError) in
            guard let state = CustomTransaction.State(rawValue: name) else {
                throw LatchError.invalidInput("state must be open, completed, cancelled or failed")
            }
            return state
        }
        let count = limit ?? 50
        guard (1...Self.maximumListing).contains(count) else { throw LatchError.invalidInput("limit must be 1–\(Self.maximumListing)") }
        let listed = try await store.customTransactions(providerID: providerID, state: filter, limit: count)
        let counts = try await store.customTransactionCounts(providerID: providerID)
        return AdminCustomTransactions(
            providerId: providerID,
            counts: Dictionary(uniqueKeysWithValues: CustomTransaction.State.allCases.map { ($0.rawValue, counts[$0] ?? 0) }),
            transactions: listed.map {
                AdminCustomTransaction(
                    transactionId: $0.id, clientId: $0.clientID, state: $0.state.rawValue, initCompleted: $0.initData != nil, attempts: $0.attempts,
                    lastStatus: $0.lastStatus, userId: $0.userID, createdAt: $0.createdAt, expiresAt: $0.expiresAt, finishedAt: $0.finishedAt)
            })
    }

    /// Checks and applies the members present.
    func apply(_ patch: AdminCustomProviderPatch, to provider: inout CustomProvider) throws {
        if let name = patch.name {
            guard AdminService.isName(name, max: 200) else { throw LatchError.invalidInput("name must be 1–200 characters without control characters") }
            provider.name = name
        }
        if let flow = patch.flow {
            guard let parsed = CustomProvider.Flow(rawValue: flow) else { throw LatchError.invalidInput("flow must be one_step or two_step") }
            provider.flow = parsed
        }
        if let url = patch.hookURL {
            if let problem = policy.urlProblem(url) { throw LatchError.invalidInput(problem) }
            provider.hookURL = url
        }
        if let secret = patch.hookSecret {
            guard (16...512).contains(secret.utf8.count) else { throw LatchError.invalidInput("hookSecret must be 16–512 bytes") }
            provider.sealedSecret = try sealer.seal(Data(secret.utf8), keyID: Self.sealingContext(provider.id))
        }
        if let timeout = patch.timeout {
            guard (1...60).contains(timeout) else { throw LatchError.invalidInput("timeout must be 1–60 seconds") }
            provider.timeout = Int64(timeout)
        }
        if let retries = patch.retries {
            guard (0...5).contains(retries) else { throw LatchError.invalidInput("retries must be 0–5") }
            provider.retries = Int64(retries)
        }
        if let lifetime = patch.transactionLifetime {
            guard (30...86_400).contains(lifetime) else { throw LatchError.invalidInput("transactionLifetime must be 30–86400 seconds") }
            provider.transactionLifetime = Int64(lifetime)
        }
        if let claims = patch.allowedClaims {
            guard claims.count <= 64, claims.allSatisfy({ AdminService.isName($0, max: 128) }), Set(claims).count == claims.count else {
                throw LatchError.invalidInput("allowedClaims must be at most 64 distinct names of 1–128 characters")
            }
            if let reserved = claims.first(where: { TokenMinter.reservedClaims.contains($0) }) {
                throw LatchError.invalidInput("\(reserved) is a registered claim name and cannot be kept from a hook")
            }
            provider.allowedClaims = claims
        }
        if let enabled = patch.enabled { provider.enabled = enabled }
        guard !provider.name.isEmpty, !provider.hookURL.isEmpty, !provider.sealedSecret.isEmpty else {
            throw LatchError.invalidInput("name, hookURL and hookSecret are required")
        }
    }

    static func view(_ provider: CustomProvider) -> AdminCustomProvider {
        AdminCustomProvider(
            id: provider.id, name: provider.name, flow: provider.flow.rawValue, hookURL: provider.hookURL, timeout: Int(provider.timeout),
            retries: Int(provider.retries), transactionLifetime: Int(provider.transactionLifetime), allowedClaims: provider.allowedClaims,
            enabled: provider.enabled, createdAt: provider.createdAt, updatedAt: provider.updatedAt)
    }
}
