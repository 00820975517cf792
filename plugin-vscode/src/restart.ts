// When to restart a crashed server: at most `maxRestarts` times within `windowMs`, then give up
// (and let the user restart it by hand). Pure, with an injectable clock.

export interface RestartDecision {
    restart: boolean;
    /** Crashes counted within the window, this one included. */
    crashes: number;
    /** What to tell the user. */
    message: string;
}

export class RestartPolicy {
    private crashes: number[] = [];

    constructor(
        private readonly maxRestarts: number,
        private readonly windowMs: number = 3 * 60 * 1000,
        private readonly now: () => number = Date.now,
    ) {}

    /** Records a crash (the server's connection closed while it should run) and decides. */
    onCrash(): RestartDecision {
        const t = this.now();
        this.crashes = this.crashes.filter((c) => t - c < this.windowMs);
        this.crashes.push(t);
        const crashes = this.crashes.length;
        const minutes = Math.round(this.windowMs / 60000);
        if (crashes <= this.maxRestarts) {
            return {
                restart: true,
                crashes,
                message: `The sift server stopped unexpectedly; restarting it (${crashes} of ${this.maxRestarts} restarts allowed in ${minutes} min).`,
            };
        }
        return {
            restart: false,
            crashes,
            message:
                this.maxRestarts === 0
                    ? 'The sift server stopped unexpectedly and sift.server.maxRestarts is 0: it stays stopped. Run "Sift: Restart Server" to start it again.'
                    : `The sift server stopped unexpectedly ${crashes} times in ${minutes} min: it stays stopped. See the "sift" output, then run "Sift: Restart Server".`,
        };
    }

    /** Forgets past crashes (after a restart the user asked for). */
    reset(): void {
        this.crashes = [];
    }
}
