import LatchCore
import LatchModel

extension SharedEngines {
    /// Registration: the proof types this deployment accepts (FIDO sign-up and test keys only when configured).
    func registrationService() -> RegistrationService {
        var proofs: [any RegistrationProof] = [
            FederatedJWTProof(store: store, verifier: verifier, assertions: assertions, loginIssuers: loginIssuers),
            AppAttestProof(apps: evidenceApps, challenges: challenges, settings: attestation, random: random),
            AndroidKeyProof(apps: evidenceApps, challenges: challenges, settings: attestation, random: random),
            PlayIntegrityProof(apps: evidenceApps, challenges: challenges, settings: attestation, random: random),
            DeviceCheckProof(
                apps: evidenceApps,
                api: AppleDeviceCheck(
                    productionURL: configuration.deviceCheckURL, developmentURL: configuration.deviceCheckDevelopmentURL,
                    timeoutSeconds: configuration.deviceCheckTimeout, clock: clock, random: random),
                random: random, logger: logger),
        ]
        var disabled: Set<RegistrationMethod> = []
        if configuration.fidoSignUp {
            proofs.append(WebAuthnProof(fido: fido))
        } else {
            disabled.insert(.webauthn)
        }
        if configuration.registration.testKeysEnabled {
            proofs.append(TestKeyProof(store: store, verifier: verifier, settings: configuration.registration, assertions: assertions))
        } else {
            disabled.insert(.test)
        }
        return RegistrationService(
            store: store, proofs: proofs, disabled: disabled, assertions: assertions, challenges: challenges, clock: clock, random: random,
            logger: logger)
    }
}
