console.log("holdfast CLI: not yet");
