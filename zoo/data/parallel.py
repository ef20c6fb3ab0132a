"""The broader parallel corpora (``parallel/`` of the data folder) and the real-text sets.

Tatoeba teaches short textbook sentences; these add subtitles, news, captions, dictionary
glosses and chat. Every file is a TSV, English first, the other language second, one pair
a line (gzip read as it is). ``CORPORA`` names each with its public source, the sha256
of the copy the presets were trained on, its domain and licence; ``read(name)`` reads
one, cleaned as its ``cleaning`` says (``normalise_subtitle_chinese``, ``first_gloss``).

A translator's training data is a *mix* (a recipe's ``mix``: corpus name -> weight,
``tatoeba`` included): ``training_pairs`` reads the corpora of a language pair, drops
empty, duplicated and misaligned pairs (``keep_pair``) and any pair that shares a
sentence with a validation or test set; a weight says how many times one epoch takes
each pair of its corpus (2: every pair twice; 0.25: a quarter of them, a different
quarter each epoch: ``zoo.training.batches.mixed_dataset``).

The real-text sets (``EVALUATION_SETS``) are split once, by position: the first part
of each validates (early stopping, the beam's settings), the rest is the test, scored
once per preset.
"""

import dataclasses
import hashlib
import re

from zoo.data import local_file, tatoeba
from zoo.data.tatoeba import Pair


@dataclasses.dataclass(frozen=True)
class Corpus:
    file: str  # under the data folder
    language: str  # the side that is not English
    domain: str
    licence: str
    url: str  # where a user outside this project gets it
    sha256: str  # of the copy the presets were trained and scored on
    cleaning: str | None = None  # "subtitle_chinese", "glosses"
    terms: str | None = None  # what the licence allows a model trained on it, where restricted


def _corpus(file, language, domain, licence, url, sha256, cleaning=None, terms=None):
    return Corpus(f"parallel/{file}", language, domain, licence, url, sha256, cleaning, terms)


CORPORA = {
    "tvsub": _corpus(
        "tvsub.en-zh.tsv.gz", "zh", "TV-series subtitles, everyday dialogue",
        "CC BY-NC-ND 4.0: research use only, no derivatives distributed commercially",
        "https://github.com/longyuewangdcu/tvsub",
        "70d046b1933cf3baee1d28b98bf01b558869b6a7a2882e94614cbde950c8b795", "subtitle_chinese",
        "research and non-commercial use only (CC BY-NC-ND 4.0)"),
    "wmt_news_zh": _corpus(
        "wmt17-20.en-zh.tsv", "zh", "news (WMT newstest 2017-2020)", "WMT shared tasks, research use",
        "https://www.statmt.org/wmt20/translation-task.html",
        "6537013ac3fcb321bede7bde4ddcb616f32b13027a7c596c8f4e0fa9160a1289",
        terms="research use (WMT test sets)"),
    "cedict": _corpus(
        "cedict.en-zh.tsv.gz", "zh", "dictionary glosses (English gloss, Chinese headword)",
        "CC BY-SA 4.0 (CC-CEDICT)", "https://www.mdbg.net/chinese/dictionary?page=cc-cedict",
        "1044afecc059bdd5140fb1e9ef2bfdf5bc506676d4cceb2cae0994006898d969", "glosses"),
    "opensubtitles_fr": _corpus(
        "opensubtitles.en-fr.tsv", "fr", "film subtitles",
        "OpenSubtitles2018 (opus.nlpl.eu), cite OPUS and OpenSubtitles",
        "https://github.com/rbawden/Large-contrastive-pronoun-testset-EN-FR",
        "946a56ee9e02c6ce5a51d37fd0f8bdfa596e3203a9a54ae8e20fc3bcebe3d88f"),
    "multi30k": _corpus(
        "multi30k.en-fr.tsv", "fr", "image captions", "Flickr30k terms, research use",
        "https://github.com/multi30k/dataset",
        "b9c86c14c88190b0460d2e064538d3e6e4992e9ede0854d072c2d45f8abb53cc",
        terms="research use (Flickr30k terms)"),
    "wmt_news_fr": _corpus(
        "newstest2008-2012.en-fr.tsv", "fr", "news (WMT newstest 2008-2012, newssyscomb2009)",
        "WMT shared tasks, research use", "https://www.statmt.org/wmt14/translation-task.html",
        "67f9274673805674a39a9283280ac9635b7a14ca148d04213a138229b8aab806",
        terms="research use (WMT test sets)"),
    "freedict": _corpus(
        "freedict.en-fr.tsv", "fr", "dictionary entries", "GPL (FreeDict eng-fra)",
        "https://freedict.org/downloads/",
        "a15e8353f255090b5bb4dfff628f3cee25ec1e9e29c8a3251d09ed264de66bb7", "glosses"),
    "ntrex_zh": _corpus(
        "ntrex128.en-zh.tsv", "zh", "news (WMT19 English sources, professional translations)",
        "CC BY-SA 4.0 (NTREX-128)", "https://github.com/MicrosoftTranslator/NTREX",
        "55ea41ea2813424cbdeebf9a0c3fddec2e61959487566258bba1a76e9a06d03c"),
    "ntrex_fr": _corpus(
        "ntrex128.en-fr.tsv", "fr", "news (WMT19 English sources, professional translations)",
        "CC BY-SA 4.0 (NTREX-128)", "https://github.com/MicrosoftTranslator/NTREX",
        "c08c709be52fd9da788128866bbe1f2b7df57288ef49adff74c35d33dc462ca4"),
    "newstest2013": _corpus(
        "newstest2013.en-fr.tsv", "fr", "news (WMT 2013)", "WMT shared tasks, research use",
        "https://www.statmt.org/wmt14/translation-task.html",
        "20bb7e6dc69d1e38930b8c0287272bb17da2de54b1e222ec3228f1e9e539b4bd"),
    "newstest2014": _corpus(
        "newstest2014.en-fr.tsv", "fr", "news (WMT 2014, the test set of Bahdanau et al. 2014)",
        "WMT shared tasks, research use", "https://www.statmt.org/wmt14/translation-task.html",
        "7585b57c8d8208c03411b0f258ca1054013a164190284f62188081233b84ea4f"),
    "diabla": _corpus(
        "diabla.en-fr.tsv", "fr", "spontaneous written chat", "CC BY-SA 4.0 (DiaBLa)",
        "https://github.com/rbawden/DiaBLa-dataset",
        "281fc524a7bce742ead276ce2a17e668a8ecb7f915d1f1700ff04e5cebe468d6"),
}

# Real-text sets, per language: {name: (corpus, first line, end line or None)}. NTREX-128
# is one news collection: its first 1,000 sentences validate, the other 997 test. A set
# that ends in "_test" is scored once, on the shipped preset.
EVALUATION_SETS = {
    "zh": {
        "ntrex_validation": ("ntrex_zh", 0, 1000),
        "ntrex_test": ("ntrex_zh", 1000, None),
    },
    "fr": {
        "ntrex_validation": ("ntrex_fr", 0, 1000),
        "ntrex_test": ("ntrex_fr", 1000, None),
        "newstest2013_validation": ("newstest2013", 0, None),
        "newstest2014_test": ("newstest2014", 0, None),
        "diabla_validation": ("diabla", 0, 2000),
        "diabla_test": ("diabla", 2000, None),
    },
}

# Training pairs longer than this (English words) are left out; 50 words and under are kept.
MAX_WORDS = 80
# A pair whose longer side has more than RATIO times the shorter side's tokens, plus
# SLACK, is taken as misaligned. Chinese counts characters (about 1.6 per English word).
LENGTH_RATIO, LENGTH_SLACK = 3.0, 4
CHARACTERS_PER_WORD = {"zh": 1.6}


def corpus_path(name, directory=None):
    if name not in CORPORA:
        raise ValueError(f"Unknown parallel corpus {name!r}; known: {', '.join(CORPORA)}.")
    corpus = CORPORA[name]
    return local_file(corpus.file, corpus.url, directory)


def read(name, directory=None):
    """The pairs of the corpus ``name``, cleaned as its ``cleaning`` says."""
    pairs = tatoeba.read_pairs(corpus_path(name, directory))
    cleaning = CORPORA[name].cleaning
    if cleaning == "subtitle_chinese":
        return [Pair(p.english, normalise_subtitle_chinese(p.other, p.english)) for p in pairs]
    if cleaning == "glosses":
        return [Pair(gloss, p.other) for p in pairs
            if (gloss := first_gloss(p.english)) and "..." not in p.other]
    return pairs


def verify(name, directory=None):
    """Whether the local copy is the one the presets were trained on (sha256)."""
    digest = hashlib.sha256(corpus_path(name, directory).read_bytes()).hexdigest()
    return digest == CORPORA[name].sha256


_HAN = "\u3400-\u9fff\uf900-\ufaff"
_CLAUSE_SPACE = re.compile(f"(?<=[{_HAN}]) +(?=[{_HAN}])")
_FINAL_MARKS = {".": "。", "?": "？", "!": "！"}


def normalise_subtitle_chinese(chinese, english=""):
    """Subtitle Chinese written as text: the space that parts two clauses is the comma
    there (我女朋友也才跟我分手 所以 -> 我女朋友也才跟我分手，所以), and a line the
    English ends with . ? or ! ends with 。？！ (subtitles drop the final mark)."""
    text = _CLAUSE_SPACE.sub("，", chinese.strip())
    final = english.rstrip()[-1:]
    if final in _FINAL_MARKS and re.search(f"[{_HAN}]$", text):
        text += _FINAL_MARKS[final]
    return text


_GLOSS_NOTE = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_NOT_A_GLOSS = re.compile(r"^(see |variant of|old variant|CL:|surname |abbr\. |used in )", re.I)


def first_gloss(entry):
    """A dictionary entry's first sense, its notes in brackets dropped ("trisomy; Down's
    syndrome" -> "trisomy"); None for a cross-reference or a classifier note."""
    gloss = _GLOSS_NOTE.sub("", entry.split(";")[0].split("/")[0]).strip(" ,")
    gloss = re.sub(" +", " ", gloss)
    if not gloss or _NOT_A_GLOSS.match(gloss) or "..." in gloss:
        return None
    return gloss


def token_length(text, language):
    """Length for the misalignment filter: English and French words, Chinese characters
    in English words' worth."""
    if language == "zh":
        return len(re.sub(r"\s", "", text)) / CHARACTERS_PER_WORD["zh"]
    return len(text.split())


def keep_pair(pair, language):
    """Not empty, at most ``MAX_WORDS`` English words, the sides' lengths in proportion."""
    english, other = token_length(pair.english, "en"), token_length(pair.other, language)
    if not english or not other or english > MAX_WORDS:
        return False
    return max(english, other) <= LENGTH_RATIO * min(english, other) + LENGTH_SLACK


def sentence_key(text):
    """A sentence as the held-out check compares it: case, spaces and final marks aside
    (a subtitle line and a test sentence differ in those alone)."""
    return re.sub(r"[\s.。?？!！]+$", "", re.sub(r"\s+", " ", text.strip())).lower()


def shares_a_sentence_with(held_out):
    """A test of a pair: whether either of its sentences is one of the pairs ``held_out``
    (either side, compared by ``sentence_key``)."""
    unseen = {sentence_key(p.english) for p in held_out} | {sentence_key(p.other) for p in held_out}
    return lambda pair: sentence_key(pair.english) in unseen or sentence_key(pair.other) in unseen


def training_pairs(names, language, held_out=(), directory=None):
    """``{corpus: [Pair]}`` of the parallel corpora ``names``: filtered by ``keep_pair``,
    each pair once across them all, none that shares a sentence with ``held_out`` (the
    pairs of the validation and test sets)."""
    held = shares_a_sentence_with(held_out)
    seen, result = set(), {}
    for name in names:
        corpus = CORPORA[name]
        if corpus.language != language:
            raise ValueError(f"The corpus {name!r} pairs English with {corpus.language!r}; "
                             f"this mix translates between English and {language!r}.")
        kept = []
        for pair in read(name, directory):
            key = (pair.english, pair.other)
            if key in seen or held(pair) or not keep_pair(pair, language):
                continue
            seen.add(key)
            kept.append(pair)
        result[name] = kept
    return result


def evaluation_set(language, name, directory=None):
    """The pairs of a real-text set of ``EVALUATION_SETS[language]``."""
    corpus, start, end = EVALUATION_SETS[language][name]
    return tatoeba.read_pairs(corpus_path(corpus, directory))[start:end]


def evaluation_sets(language, role, directory=None):
    """``{name: [Pair]}``: the real-text sets that validate (``role`` "validation") or
    test (``"test"``) a translator between English and ``language``."""
    return {name: evaluation_set(language, name, directory)
            for name in EVALUATION_SETS.get(language, {}) if name.endswith("_" + role)}


def describe(name):
    """What a model card says of a corpus."""
    corpus = CORPORA[name]
    return {"file": corpus.file, "url": corpus.url, "sha256": corpus.sha256,
            "domain": corpus.domain, "licence": corpus.licence}

