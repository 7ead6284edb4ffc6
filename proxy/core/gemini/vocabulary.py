"""The keys of a Gemini-native request (gemini-native.md §1), in both spellings: redacted
capture keeps them as they are (:attr:`proxy.core.wire.Wire.vocabulary`)."""

from __future__ import annotations

from proxy.core.gemini.spelling import snake

_CAMEL = (
    # request level (§1.1, §1.3)
    *("contents", "systemInstruction", "tools", "toolConfig", "generationConfig"),
    *("safetySettings", "cachedContent", "labels", "request", "project", "userPromptId"),
    *("sessionId", "enabledCreditTypes", "model"),
    # contents and parts (§1.2)
    *("role", "parts", "text", "thought", "thoughtSignature", "inlineData", "fileData"),
    *("mimeType", "data", "fileUri", "functionCall", "functionResponse", "id", "name"),
    *("args", "response", "willContinue", "scheduling", "partialArgs", "executableCode"),
    *("codeExecutionResult", "language", "code", "outcome", "output", "error", "toolCall"),
    *("toolResponse", "toolType", "videoMetadata", "mediaResolution", "partMetadata"),
    # tools and configs
    *("functionDeclarations", "description", "parameters", "parametersJsonSchema"),
    *("googleSearch", "codeExecution", "urlContext", "functionCallingConfig", "mode"),
    *("allowedFunctionNames", "temperature", "topP", "topK", "maxOutputTokens"),
    *("candidateCount", "stopSequences", "responseMimeType", "responseSchema"),
    *("responseModalities", "thinkingConfig", "thinkingBudget", "thinkingLevel"),
    *("includeThoughts", "category", "threshold", "seed"),
)


GEMINI_KEYS = frozenset(_CAMEL) | frozenset(snake(name) for name in _CAMEL)
