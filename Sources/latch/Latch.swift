import ArgumentParser

@main
struct Latch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latch",
        abstract: "Latch: a self-hosted identity service for mobile apps.",
        subcommands: [Serve.self, Admin.self, Device.self, Keys.self, Bench.self])
}
